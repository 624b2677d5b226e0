"""Packages require shape generality by default (issue 22): a solution whose verdict says it is specialised to the
problem's shapes is refused with the failing shape and the way on; asked for with --allow-specialized, it is packaged
and its README and notes say that it only accepts the problem's shapes."""

import contextlib
import io
import json
import tarfile

import pytest

from sandbox import evaluate
from sandbox.cli import main
from sandbox.config import EvalConfig
from sandbox.package import SpecializedSolution, package_solution

HALF = "(64, 512), (64, 512)"


@pytest.fixture(scope="module")
def specialised(module_files, sources):
    """(problem, workspace, verdict file) of the specialised add_relu kernel, its verdict from a real evaluation."""
    files = module_files
    problem = files.problem(sources["ELEMENTWISE"], "elementwise.py")
    workspace = files.workspace(sources["SPECIALIZED_WORKSPACE"])
    config = EvalConfig(device="cpu", trials=2, compiled_baseline=False, time_budget_s=0.2, timeout_s=120)
    verdict = evaluate(problem, workspace, config)
    assert verdict.correct and verdict.shape_general is False and verdict.failing_shape == HALF, verdict.log[-2000:]
    path = files.root / "verdict.json"
    path.write_text(verdict.dumps())
    return problem, workspace, path


def _cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["package", *map(str, argv)])
    return code, out.getvalue(), err.getvalue()


def test_the_cli_refuses_a_specialised_solution_naming_the_shape_and_the_way_on(specialised, tmp_path):
    problem, workspace, verdict = specialised
    code, out, err = _cli(problem, workspace, "--out", tmp_path / "dist", "--verdict", verdict, "--no-check")
    assert code == 2 and out == ""
    assert f"specialised to the problem's shapes (fails at {HALF})" in err
    assert "--allow-specialized" in err and "only accepts the problem's shapes" in err
    assert not (tmp_path / "dist").exists()  # refused before anything was built


def test_package_solution_refuses_it_with_a_typed_error(specialised, tmp_path):
    problem, workspace, verdict = specialised
    with pytest.raises(SpecializedSolution) as refused:
        package_solution(problem, workspace, tmp_path, verdict=json.loads(verdict.read_text()), check=False)
    assert refused.value.specialised == f"specialised to the problem's shapes (fails at {HALF})"


def test_allowed_it_is_packaged_and_its_readme_and_notes_say_it_only_accepts_the_problems_shapes(specialised, tmp_path):
    problem, workspace, verdict = specialised
    code, out, err = _cli(
        problem, workspace, "--out", tmp_path, "--verdict", verdict, "--allow-specialized", "--no-wheel", "--no-check"
    )
    assert code == 0, err
    report = json.loads(out)
    sentence = "This package only accepts the problem's shapes: its solution is specialised to the problem's shapes"
    assert report["notes"][0].startswith(sentence) and HALF in report["notes"][0]
    with tarfile.open(report["sdist"]) as tar:
        readme = next(tar.extractfile(m).read().decode() for m in tar.getmembers() if m.name.endswith("/README.md"))
    assert sentence in readme and HALF in readme


def test_a_verdict_that_found_no_other_shape_to_check_is_packaged_without_the_note(specialised, tmp_path):
    problem, workspace, verdict = specialised
    unchecked = {**json.loads(verdict.read_text()), "shape_general": None, "failing_shape": ""}
    result = package_solution(problem, workspace, tmp_path, verdict=unchecked, build_wheel=False, check=False)
    assert not any("only accepts the problem's shapes" in note for note in result.notes), result.notes
