"""The staff area's landing page, its guard, and Stop for its jobs (evaluations, synthesis and training runs)."""

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render
from django.utils import timezone

from studio import queues


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


def stop(row, user):
    """Stop a staff job that is queued or running: its row is marked stopped first (its job only closes a row still
    running), then its RQ job is cancelled or its work horse killed, whereupon the worker ends every process the job
    started and removes its scratch folder (studio.workers). What it already wrote to its own folder stays."""
    model = type(row)
    if model.objects.filter(pk=row.pk, status__in=model.ACTIVE).update(
        status=model.Status.STOPPED, finished_at=timezone.now(), error=f"stopped by {user.get_username()}"
    ):
        queues.stop(row.job_id)
