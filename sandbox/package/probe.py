"""The parent side of the packaging probe: the solution built and run in a jail (sandbox.package.probe_worker),
its operators' calls recorded at the problem's shapes, other batch sizes and grown sizes, and fakes checked there."""

import logging
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from sandbox import settings
from sandbox.errors import BuildError, PackagingError
from sandbox.isolation import Jail
from sandbox.solution import Solution

log = logging.getLogger(__name__)
WORKER = "sandbox.package.probe_worker"
PROBE_NAMESPACE = "ks_probe"  # where the check defines the custom operators wrapping pybind11 functions


@dataclass
class Records:
    """What the probe saw: every recorded call, the batch variants tried, the namespace of the solution's library
    operators in the jail, and what the package's notes should say."""

    calls: list = field(default_factory=list)
    variants: list = field(default_factory=list)
    namespace: str | None = None
    notes: list = field(default_factory=list)

    def of(self, name):
        return [c for c in self.calls if c["op"] == name]


class Probe:
    """One jail holding the solution; `record()` then `check(sources)`. Use as a context manager."""

    def __init__(self, problem_path, solution_path, plan, atol=1e-2, rtol=1e-2):
        self.problem_path, self.solution = Path(problem_path), Solution.read(solution_path)
        self.plan, self.atol, self.rtol = plan, atol, rtol
        self.seed = secrets.randbits(31)
        self.jail = self.worker = None

    def __enter__(self):
        self.jail = Jail("package", self.plan.device)
        try:
            self.problem = self.jail.give(self.problem_path, "problem.py")
            if self.solution.kind == "workspace":
                self.entry = self.jail.give(self.solution.path, "workspace") / "model_new.py"
                self._build()
            else:
                self.entry = self.jail.give(self.solution.path, "solution.py")
                self._expose_inline_headers()
        except BaseException:
            self.jail.close()
            raise
        return self

    def __exit__(self, *exc):
        self._stop()
        self.jail.close()

    def _build(self):
        from sandbox.native.build import build_folder, build_workspace

        device = self.plan.device
        try:
            self.jail.expose(build_folder(self.solution.path, device))
            build_workspace(self.solution.path, device, jail=self.jail, timeout=settings.TIMEOUT_S)
        except BuildError as exc:
            raise BuildError(f"building the solution to run it: {exc}", exc.log) from None

    def _expose_inline_headers(self):
        from sandbox.native import inline

        source = self.solution.files["solution.py"]
        if not inline.wanted(source):
            return
        try:
            for folder in inline.prepare_headers(source, self.solution.path, self.plan.device):
                self.jail.expose(folder)
        except (BuildError, inline.Fallback, OSError, RuntimeError) as exc:
            log.warning(
                "no precompiled torch header for %s (%s): its load_inline builds in full", self.solution.path, exc
            )

    def _start(self):
        """A worker that has run ModelNew; returns its 'ran' message."""
        from sandbox.harness import StageFailed, Worker

        self.worker = Worker(self.jail, WORKER, "solution", settings.TIMEOUT_S)
        ops = self.plan.ops
        try:
            self.worker.recv("started", stage="start the probe")
            self.worker.send(
                "start",
                device=self.plan.device,
                problem=str(self.problem),
                solution=str(self.entry),
                seed=self.seed,
                atol=self.atol,
                rtol=self.rtol,
                schema_ops=[op.full_name for op in ops if not op.function],
                functions=[op.function for op in ops if op.function],
                modules=sorted({op.module for op in ops if op.function}),
            )
            return self.worker.recv("ran", stage="run ModelNew")
        except StageFailed as failure:
            self._stop()
            raise PackagingError(
                f"the solution failed ({failure.status}) when run on the problem's inputs to learn "
                f"its operators' output shapes:\n{failure.log[-3000:]}"
            ) from None

    def _stop(self):
        if self.worker is not None:
            if self.worker.proc.poll() is None:
                self.worker.send("exit")
            self.worker.close()
            self.worker = None

    def record(self):
        """Records of ModelNew's calls at the problem's inputs and batch variants, then of each operator with its
        sizes grown one at a time. A kernel that crashes on grown sizes ends the growing, not the probe."""
        from sandbox.harness import StageFailed

        ran = self._start()
        records = Records(list(ran["calls"]), list(ran["variants"]), ran.get("namespace"))
        for variant in records.variants:
            if not variant["ok"]:
                records.notes.append(
                    f"this solution is specialized to the problem's shapes: at {variant['label']} "
                    f"(Model accepts it) it gave {variant['why']}"
                )
        self.worker.restart_clock(settings.TIMEOUT_S)
        self.worker.send("grow")
        growing = None
        try:
            while True:
                msg = self.worker.recv("growing", "grown", "grew", stage="call the operators at grown sizes")
                if msg["kind"] == "grew":
                    break
                if msg["kind"] == "growing":
                    growing = msg
                elif msg["call"] is not None:
                    records.calls.append(msg["call"])
                else:
                    raise StageFailed("crashed", msg["fault"])
        except StageFailed as failure:
            where = f"{growing['op']} with a size {growing['size']} grown to {growing['new']}" if growing else "it"
            records.notes.append(
                f"calling {where} {failure.status} the kernel ({failure.log.strip()[-300:]}); "
                f"shapes were inferred from the calls before"
            )
            self._stop()
        return records

    def check(self, sources):
        """{operator: why opcheck failed} for SOURCES ({operator: its ops.py code}), run where the solution runs."""
        from sandbox.harness import StageFailed

        if self.worker is None:
            self._start()
        self.worker.restart_clock(settings.TIMEOUT_S)
        self.worker.send("check", sources=sources)
        try:
            return self.worker.recv("checked", stage="opcheck the fakes")["failures"]
        except StageFailed as failure:
            self.worker = None
            return {name: f"opcheck {failure.status}: {failure.log.strip()[-500:]}" for name in sources}
