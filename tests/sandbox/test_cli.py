"""`python -m sandbox evaluate PROBLEM SOLUTION --device cpu --json`: one JSON verdict on stdout and exit 0 when a
verdict was reached (whatever it is); exit 2 with the reason on stderr on misuse."""

import json
import os
import subprocess
import sys

from sandbox.reward import milestone, paper
from sandbox.verdict import STATUSES, Verdict

CONTRACT = (
    "status",
    "correct",
    "violations",
    "runtime_ms",
    "eager_ms",
    "compiled_ms",
    "speedup_vs_eager",
    "speedup_vs_compiled",
    "reward",
    "compile_s",
    "log",
)


def _cli(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "sandbox", *map(str, args)],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "KS_SANDBOX_TIMEOUT": "120"},
    )


def test_evaluate_prints_one_json_verdict(elementwise, honest):
    proc = _cli("evaluate", elementwise, honest, "--device", "cpu", "--json", "--no-compiled", "--trials", "2")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stdout
    data = json.loads(lines[0])
    for key in CONTRACT:
        assert key in data, key
    assert data["status"] == "ok" and data["correct"] is True and data["reward"] >= 1
    assert data["compiled_ms"] is None and data["device"] == "cpu"
    assert Verdict.from_json(data).status == "ok"
    assert data["reward_schedule"] == "paper" and data["reward"] == paper(True, data["speedup_vs_eager"], None)


def test_evaluate_takes_the_milestone_schedule(elementwise, honest):
    proc = _cli(
        "evaluate",
        elementwise,
        honest,
        "--device",
        "cpu",
        "--json",
        "--no-compiled",
        "--trials",
        "1",
        "--reward",
        "milestone",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "ok" and data["reward_schedule"] == "milestone"
    assert data["reward"] == milestone(True, data["speedup_vs_eager"], None)


def test_evaluate_refuses_an_unknown_schedule_and_explains_both(elementwise, honest):
    proc = _cli("evaluate", elementwise, honest, "--device", "cpu", "--reward", "speedup")
    assert proc.returncode == 2 and "invalid choice: 'speedup'" in proc.stderr
    help_text = _cli("evaluate", "--help").stdout
    assert "--reward {paper,milestone}" in help_text and "Eq. 1" in help_text


def test_evaluate_exits_0_for_a_failing_solution(elementwise, files):
    proc = _cli(
        "evaluate",
        elementwise,
        files.solution("raise SystemExit(3)\n"),
        "--device",
        "cpu",
        "--json",
        "--no-compiled",
        "--trials",
        "1",
    )
    assert proc.returncode == 0, proc.stderr  # a verdict was reached: the solution's failure is its content
    data = json.loads(proc.stdout)
    assert data["status"] == "load_error" and data["status"] in STATUSES and data["reward"] == -1


def test_evaluate_without_json_prints_a_summary(elementwise, files):
    proc = _cli(
        "evaluate",
        elementwise,
        files.solution("import nonexistent_module_ks\n"),
        "--device",
        "cpu",
        "--no-compiled",
        "--trials",
        "1",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("load_error, reward -1")
    assert "nonexistent_module_ks" in proc.stdout


def test_missing_problem_exits_2(tmp_path, honest):
    proc = _cli("evaluate", tmp_path / "nowhere.py", honest, "--device", "cpu", "--json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "does not exist" in proc.stderr and "nowhere.py" in proc.stderr


def test_missing_solution_exits_2(tmp_path, elementwise):
    proc = _cli("evaluate", elementwise, tmp_path / "nothing.py", "--device", "cpu", "--json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "does not exist" in proc.stderr and "nothing.py" in proc.stderr


def test_a_folder_without_model_new_exits_2(tmp_path, elementwise):
    (tmp_path / "ws").mkdir()
    proc = _cli("evaluate", elementwise, tmp_path / "ws", "--device", "cpu", "--json")
    assert proc.returncode == 2
    assert "model_new.py" in proc.stderr


def test_an_invalid_problem_exits_2_with_the_reason(files, honest):
    problem = files.problem(
        "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return x\n\ndef get_init_inputs():\n    return []\n"
    )
    proc = _cli("evaluate", problem, honest, "--device", "cpu", "--json", "--no-compiled")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert "invalid problem" in proc.stderr and "defines no get_inputs" in proc.stderr


def test_bad_arguments_exit_2(elementwise, honest):
    proc = _cli("evaluate", elementwise, honest, "--device", "tpu")
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr


def test_build_prints_the_library(files, sources):
    workspace = files.workspace(sources["STABLE_WORKSPACE"])
    proc = _cli("build", workspace, "--device", "cpu")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert os.path.isfile(data["library"]) and isinstance(data["cached"], bool)


def test_every_option_of_every_sandbox_subcommand_says_what_it_does():
    import argparse

    from sandbox.cli import build_parser

    parser = build_parser()
    (subcommands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    silent = [
        f"{name} {action.option_strings[0]}"
        for name, sub in subcommands.choices.items()
        for action in sub._actions
        if action.option_strings and not action.help
    ]
    assert silent == [] and set(subcommands.choices) >= {"evaluate", "profile", "validate", "build", "package"}
