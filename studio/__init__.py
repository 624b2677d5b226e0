"""Kernel Studio's Django project and app: settings, pages, live updates, jobs."""
