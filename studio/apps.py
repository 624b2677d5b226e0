"""The Django app configuration of the studio."""

from django.apps import AppConfig


class StudioConfig(AppConfig):
    name = "studio"
    verbose_name = "Kernel Studio"
