"""How a jailed worker that serves one problem starts and ends: its command line (the two descriptors of its
channel), becoming a worker (off the timing cores, the reaper of what it starts), the problem opened (device set
up, file imported, Model validated, the other input sizes it accepts found where asked) with one wording for every
failure, and every process it left reaped. Shared by the sandbox's workers and training.synthesis.probe."""

import argparse
from typing import Any, NamedTuple

from sandbox.problem import import_file
from sandbox.protocol import Channel
from sandbox.workers.common import become_worker, error_text, reap_children, setup_device
from sandbox.workers.validation import shape_variants, validate


class ProblemRejected(Exception):
    """The problem could not be opened: `reason` is the sentence its author reads, `log` the traceback."""

    def __init__(self, reason, log):
        super().__init__(reason)
        self.reason, self.log = reason, log


class OpenProblem(NamedTuple):
    """A problem a worker serves: its module, its Model on the device, the spec of its inputs and outputs, and the
    input variants its Model accepts (empty unless the START message asked for the shape check)."""

    module: Any
    model: Any
    spec: dict
    variants: list


def worker_main(serve, prog, description, argv=None):
    """Run SERVE(channel) as the jailed worker `python -m PROG READ_FD WRITE_FD` (how sandbox.harness.Worker
    starts one), and reap whatever it started, whether it returns or raises."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {prog}",
        description=description,
        epilog="Not a command for people: the sandbox's Worker starts it in the jail.",
    )
    parser.add_argument("read_fd", type=int, help="the descriptor it reads the parent's messages from")
    parser.add_argument("write_fd", type=int, help="the descriptor it answers on")
    args = parser.parse_args(argv)
    become_worker()
    try:
        serve(Channel(args.read_fd, args.write_fd))
    finally:
        reap_children()


def open_problem(start):
    """The OpenProblem a worker's START message names, on its device; ProblemRejected with the reason otherwise (a
    ValueError's own message, which validation writes for the author, else the import's)."""
    try:
        setup_device(start["device"])
        module = import_file(start["problem"], "ks_problem")
        model, spec = validate(module, start["device"], start["init_seed"], start["validation_seed"])
        variants = (
            shape_variants(module, model, start["device"], start["validation_seed"]) if start.get("shape_check") else []
        )
    except Exception as exc:  # noqa: BLE001 -- every failure becomes the problem's error message
        reason = (
            str(exc) if isinstance(exc, ValueError) else f"importing the problem failed: {type(exc).__name__}: {exc}"
        )
        raise ProblemRejected(reason, error_text(exc)) from exc
    return OpenProblem(module, model, spec, variants)
