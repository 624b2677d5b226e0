"""RQ jobs: everything that runs user code or the sandbox happens here, on a worker, never in the web process."""
import hashlib
import logging
import tempfile
from pathlib import Path

from django.conf import settings

from sandbox.errors import InvalidProblem
from sandbox.validate import validate_problem as validate_problem_file
from studio.models import Problem

log = logging.getLogger(__name__)


def validate_problem(owner_id, name, source, device):
    """Validate an uploaded module in the sandbox; store it only if it is valid. {"problem_id"} or {"error"}."""
    with tempfile.TemporaryDirectory(prefix="ks-upload-") as tmp:
        path = Path(tmp) / "problem.py"
        path.write_text(source, encoding="utf-8")
        try:
            spec = validate_problem_file(path, device, timeout=settings.KS_VALIDATE_TIMEOUT)
        except InvalidProblem as exc:
            log.info("upload %r of user %s rejected: %s", name, owner_id, exc)
            return {"error": str(exc).replace(f"invalid problem {path}: ", "").replace(str(path), name)}
    problem = Problem.objects.create(owner_id=owner_id, name=name, source=source, device=device, spec=spec,
                                     sha256=hashlib.sha256(source.encode()).hexdigest())
    log.info("upload %r of user %s stored as problem %s", name, owner_id, problem.pk)
    return {"problem_id": problem.pk}
