"""Template context shared by every page."""

from django.conf import settings
from django.templatetags.static import static

from studio.vendor import static_path


def vendor(request):
    return {"htmx_js": static(static_path("htmx.org")), "monaco_vs": static(static_path("monaco-editor"))}


def features(request):
    return {"signup_open": settings.KS_SIGNUP}
