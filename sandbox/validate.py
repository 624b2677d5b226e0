"""Problem validation on its own (for uploads): imports, runs, deterministic, tensor outputs; nothing is timed."""

import secrets

from sandbox import settings
from sandbox.errors import InvalidProblem
from sandbox.isolation import Jail
from sandbox.problem import Problem


def validate_problem(path, device="cpu", timeout=None):
    """The problem's spec (input and output shapes and dtypes); InvalidProblem with the reason otherwise."""
    from sandbox.config import EvalConfig
    from sandbox.harness import StageFailed, Worker

    problem = Problem.read(path)
    timeout = timeout or settings.BASELINE_TIMEOUT_S
    with Jail("validate", device) as jail:
        copy = jail.give(problem.path, "problem.py")
        worker = Worker(jail, "sandbox.workers.reference", "problem", timeout)
        try:
            worker.send(
                "start",
                device=device,
                config=EvalConfig(device=device).to_json(),
                problem=str(copy),
                init_seed=secrets.randbits(31),
                validation_seed=secrets.randbits(31),
                measure=False,
            )
            msg = worker.recv("ready", "invalid")
            worker.send("exit")
        except StageFailed as failure:
            what = "took too long" if failure.status == "timeout" else "crashed"
            raise InvalidProblem(f"invalid problem {problem.path}: running it {what}: {failure.log[-2000:]}") from None
        finally:
            worker.close()
    if msg["kind"] == "invalid":
        raise InvalidProblem(f"invalid problem {problem.path}: {msg['reason']}")
    return msg["spec"]
