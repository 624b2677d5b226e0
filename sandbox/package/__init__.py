"""Packaging a verified solution as a pip-installable PyTorch extension: `package_solution` writes the sdist and,
where this machine can compile it, the wheel.

The package has the shape of pytorch/extension-cpp: `csrc/` (the kernels and binding), `src/<name>/` whose
`ops.py` registers each kernel as a torch.library operator with a fake implementation (so torch.compile traces
it) and whose `ModelNew` is the solution's, importing those operators instead of building anything; `tests/`
against the original Model; a README with what was measured. Each package gets its own operator namespace.
The fakes are inferred from the solution run in a jail (sandbox.package.fakes); by default the built package is
then installed into a fresh virtual environment and its own tests must pass (sandbox.package.verify). A solution
whose verdict says it is specialised to the problem's shapes is refused unless asked for (issue 22), and then its
README and notes say so.
"""

import logging
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sandbox.package.build import build_sdist, wheel_buildable
from sandbox.package.build import build_wheel as wheel_from_sdist
from sandbox.package.fakes import infer_fakes
from sandbox.package.plan import make_plan
from sandbox.package.render import render
from sandbox.package.verify import PackageCheckFailed, check_package
from sandbox.errors import PackagingError
from sandbox.verdict import Verdict, specialization

__all__ = ["PackageCheckFailed", "PackageResult", "SpecializedSolution", "package_solution"]
log = logging.getLogger(__name__)


class SpecializedSolution(PackagingError):
    """The verdict says the solution is right only at the problem's shapes (shape_general false): a package of it
    would fail in a model that calls it at another batch size. The message names the failing shape and the way on."""

    def __init__(self, specialised):
        super().__init__(
            f"not packaged: the solution is {specialised}, so a model calling it at other input sizes would fail. "
            f"Make its kernels take their sizes at run time and evaluate it again, or pass --allow-specialized "
            f"(allow_specialized=True) to package it anyway: its README and notes then say that it only accepts the "
            f"problem's shapes"
        )
        self.specialised = specialised


def specialised_note(specialised):
    """The words a specialised package's README and notes carry."""
    return (
        f"This package only accepts the problem's shapes: its solution is {specialised}. Call it with other input "
        f"sizes and its kernels raise or give wrong results; it was packaged anyway, on request (--allow-specialized)."
    )


@dataclass
class PackageResult:
    sdist: str
    wheel: str | None
    name: str  # the distribution name
    version: str
    module: str = ""  # the import name, also the namespace of the operators: torch.ops.<module>.*
    device: str = ""
    operators: list = field(default_factory=list)
    notes: list = field(default_factory=list)  # what the user should know: no wheel and why, fakes to write
    check: dict | None = None  # its own tests in a fresh environment: ok, installed, seconds, failed, passed

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, data):
        return cls(**data)


def package_solution(
    problem, solution, out_dir, name=None, verdict=None, build_wheel=None, check=True, allow_specialized=False
):
    """Package SOLUTION (a load_inline .py or a native workspace) of PROBLEM into OUT_DIR.

    NAME defaults to ks-<problem name>; VERDICT (a Verdict or its JSON) fills the README's measurements;
    BUILD_WHEEL None builds the wheel where this machine can (any machine for CPU kernels, a CUDA toolkit and a
    CUDA torch for GPU kernels). The solution runs once, jailed, to infer its operators' fakes. CHECK installs the
    package into a fresh virtual environment and runs its own tests (where the wheel was built). Raises
    PackagingError for what cannot be packaged, SpecializedSolution where VERDICT says the solution is specialised to
    the problem's shapes and ALLOW_SPECIALIZED is false, PackageCheckFailed (naming the failing tests) if the package's
    tests fail, BuildError if a build fails.
    """
    if isinstance(verdict, dict):
        verdict = Verdict.from_json(verdict)
    specialised = specialization(verdict) if verdict is not None else ""
    if specialised and not allow_specialized:
        raise SpecializedSolution(specialised)
    plan = infer_fakes(make_plan(problem, solution, name, verdict), problem, solution)
    if specialised:
        plan.notes.insert(0, specialised_note(specialised))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ks-package-") as tmp:
        sdist = build_sdist(render(plan, Path(tmp) / f"{plan.module}-{plan.version}"), out_dir)
    notes = list(plan.notes)
    if verdict is not None and not verdict.correct:
        notes.append(f"the attached verdict is {verdict.status!r}, not a pass: this solution was not verified")
    if build_wheel is None:
        build_wheel, why = wheel_buildable(plan.device)
        if not build_wheel:
            notes.append(f"no wheel: {why}")
    wheel = wheel_from_sdist(sdist, out_dir) if build_wheel else None
    log.info("packaged %s as %s%s", solution, sdist, f" and {wheel}" if wheel else "")
    result = PackageResult(
        str(sdist),
        str(wheel) if wheel else None,
        plan.dist,
        plan.version,
        plan.module,
        plan.device,
        [f"{plan.module}::{op.full_name}" for op in plan.ops],
        notes,
    )
    if check and wheel is None:
        notes.append("not checked: the package's tests need the wheel, which was not built here")
    elif check:
        with tempfile.TemporaryDirectory(prefix="ks-check-") as tmp:
            checked = check_package(sdist, tmp, install=wheel)
        result.check = {
            "ok": checked.ok,
            "installed": checked.installed,
            "seconds": checked.seconds,
            "failed": checked.failed,
            "passed": checked.passed,
        }
        if not checked.ok:
            raise PackageCheckFailed(checked, result)
    return result
