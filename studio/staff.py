"""The staff area's landing page: queues, data, and the places for training, synthesis and evaluation runs."""
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render


def staff_only(view):
    """Signed-in staff only: others are sent to sign in, or refused with 403 when signed in."""
    @login_required
    @wraps(view)
    def guarded(request, *args, **kwargs):
        if not request.user.is_staff:
            raise PermissionDenied("the admin area is for staff")
        return view(request, *args, **kwargs)
    return guarded


@staff_only
def landing(request):
    return render(request, "studio/staff.html")
