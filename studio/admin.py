"""The admin site of the studio, where research engineers manage runs and data."""

from django.contrib import admin

admin.site.site_header = "Kernel Studio admin"
admin.site.site_title = "Kernel Studio"
