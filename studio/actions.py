"""The only writer of run state and the only emitter of run events (Zulip's "actions" rule).

Every event is stored with the run's next sequence number and committed before it is published to the
run's channel group, so a browser that connects late or reconnects replays what it missed from the
database and then follows the live stream, de-duplicating by sequence number.
"""

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.utils import timezone

from studio.failures import explain
from studio.models import Run, RunEvent

log = logging.getLogger(__name__)


def group_name(run_id):
    return f"run-{run_id}"


def append_event(run_id, kind, payload):
    """Store the next event of RUN_ID and publish it once the transaction has committed."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        run.last_seq += 1
        run.save(update_fields=["last_seq"])
        event = RunEvent.objects.create(run=run, seq=run.last_seq, kind=kind, payload=payload)
        message = event.to_message()
        transaction.on_commit(lambda: publish(run_id, message))
    return event


def publish(run_id, message):
    """Send one stored event to the run's group; a failure here loses nothing (the event is stored)."""
    try:
        async_to_sync(get_channel_layer().group_send)(group_name(run_id), {"type": "run.event", "event": message})
    except Exception:  # noqa: BLE001 -- browsers will replay it from the database
        log.exception("run %s: publishing event %s failed", run_id, message["seq"])


def set_status(run_id, status, error=""):
    """Move a run to STATUS (with timestamps) and announce it as an event."""
    now = timezone.now()
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        run.status = status
        if status == Run.Status.RUNNING and run.started_at is None:
            run.started_at = now
        if status in Run.FINISHED:
            run.finished_at = now
        if error:
            run.error = error
        run.save(update_fields=["status", "started_at", "finished_at", "error"])
        append_event(run_id, "status", {"status": status, "error": error})
    log.info("run %s: %s%s", run_id, status, f" ({error})" if error else "")


def events_after(run_id, seq):
    return [e.to_message() for e in RunEvent.objects.filter(run_id=run_id, seq__gt=seq).order_by("seq")]


def record_version(run_id, files, verdict, parent=None, author="agent"):
    """Store a solution of a run as a KernelVersion (the agent's, or a person's kept edit with AUTHOR); a correct
    one that beats the best so far becomes the run's best_version."""
    from studio.models import KernelVersion

    with transaction.atomic():
        run = Run.objects.select_for_update(of=("self",)).select_related("best_version").get(pk=run_id)
        version = KernelVersion.objects.create(
            problem_id=run.problem_id,
            run=run,
            files=files,
            verdict=verdict,
            parent=parent or run.best_version,
            author=author,
            human_edit=author != "agent",
        )
        if _better(verdict, run.best_version.verdict if run.best_version else None):
            run.best_version = version
            run.save(update_fields=["best_version"])
        append_event(
            run_id,
            "version",
            {
                "version": version.pk,
                "status": verdict.get("status"),
                "reward": verdict.get("reward"),
                "runtime_ms": verdict.get("runtime_ms"),
                "eager_ms": verdict.get("eager_ms"),
                "compiled_ms": verdict.get("compiled_ms"),
                "best": run.best_version_id == version.pk,
                "author": author,
            },
        )
    return version


def _better(verdict, best):
    if not verdict.get("correct", verdict.get("status") == "ok"):
        return False  # a kept edit that fails is stored, never the best
    if best is None:
        return True
    key = lambda v: (v.get("reward", -1), -(v.get("runtime_ms") or float("inf")))  # noqa: E731
    return key(verdict) > key(best)


def finish_run(run_id, trajectory, error=""):
    """Close a run: its trajectory, the problem's baselines, and the final status (one event each)."""
    verdict = trajectory.get("verdict") or {}
    with transaction.atomic():
        run = Run.objects.select_for_update(of=("self",)).select_related("problem").get(pk=run_id)
        run.trajectory = trajectory
        run.save(update_fields=["trajectory"])
        problem = run.problem
        if verdict.get("eager_ms") and problem.eager_ms is None:
            problem.eager_ms, problem.compiled_ms = verdict["eager_ms"], verdict.get("compiled_ms")
            problem.save(update_fields=["eager_ms", "compiled_ms"])
    set_status(run_id, Run.Status.FAILED if error else Run.Status.SUCCEEDED, error=error)


VERDICT_KEYS = (
    "status",
    "correct",
    "reward",
    "reward_schedule",
    "runtime_ms",
    "eager_ms",
    "compiled_ms",
    "speedup_vs_eager",
    "speedup_vs_compiled",
    "speedup_vs_eager_tf32",
    "speedup_vs_compiled_tf32",
    "max_abs_error",
    "max_abs_error_fp64",
    "violations",
    "trials",
    "compile_s",
)


def evaluation_message(evaluation, log_chars=8000):
    """An evaluation as streamed: who, which version, where it stands, and the verdict's figures and log."""
    verdict = evaluation.verdict and {k: evaluation.verdict.get(k) for k in VERDICT_KEYS}
    if verdict is not None:
        log = evaluation.verdict.get("log") or ""
        verdict["log"] = (
            log if len(log) <= log_chars else log[:log_chars] + f"\n[... {len(log) - log_chars} more characters]"
        )
    return {
        "evaluation": evaluation.pk,
        "version": evaluation.base_id,
        "by": evaluation.owner.get_username(),
        "status": evaluation.status,
        "error": evaluation.error,
        "failure": explain(evaluation.error).sentence if evaluation.error else "",  # the error as a sentence to act on
        "verdict": verdict,
    }


def queue_evaluation(owner, base, files, enqueue):
    """Store an edit of BASE to evaluate, announce it on the run's stream, and ENQUEUE(evaluation_id) -> job id."""
    from studio.models import Evaluation

    with transaction.atomic():
        evaluation = Evaluation.objects.create(owner=owner, base=base, run_id=base.run_id, files=files)
        append_event(base.run_id, "evaluation", evaluation_message(evaluation))
    evaluation.job_id = enqueue(evaluation.pk)
    evaluation.save(update_fields=["job_id"])
    return evaluation


def set_evaluation(evaluation_id, status, verdict=None, error=""):
    """Move an evaluation to STATUS with its verdict (or the reason there is none); stored, then streamed."""
    from studio.models import Evaluation

    with transaction.atomic():
        evaluation = Evaluation.objects.select_for_update(of=("self",)).select_related("owner").get(pk=evaluation_id)
        evaluation.status, evaluation.error = status, error
        if verdict is not None:
            evaluation.verdict = verdict
        evaluation.save(update_fields=["status", "verdict", "error"])
        append_event(evaluation.run_id, "evaluation", evaluation_message(evaluation))
    log.info("evaluation %s: %s%s", evaluation_id, status, f" ({error})" if error else "")
    return evaluation


def keep_evaluation(evaluation_id):
    """Keep an evaluated edit as a new version of its run, marked as its author's, with its verdict (once)."""
    from studio.models import Evaluation

    with transaction.atomic():
        evaluation = Evaluation.objects.select_for_update(of=("self",)).select_related("owner").get(pk=evaluation_id)
        if evaluation.kept_version_id:
            return evaluation.kept_version
        if evaluation.status != Evaluation.Status.DONE:
            raise NotEvaluated(f"evaluation {evaluation_id} is {evaluation.status}: keep an edit once it has a verdict")
        version = record_version(
            evaluation.run_id,
            evaluation.files,
            evaluation.verdict,
            parent=evaluation.base,
            author=evaluation.owner.get_username(),
        )
        evaluation.kept_version = version
        evaluation.save(update_fields=["kept_version"])
    return version


class NotEvaluated(Exception):
    """An edit was to be kept before its verdict arrived."""
