"""Every `python -m` command of the training package (and the benchmark that drives it) prints its help and exits
0; the plots command refuses a folder that holds no run with exit 2 and the reason."""

import runpy
import sys

import pytest

COMMANDS = [
    ["training"],
    ["training", "evaluate"],
    ["training", "synthesize"],
    ["training", "train"],
    ["training", "data"],
    ["training", "distill-data"],
    ["training.evaluation.archive"],
    ["training.rl.plots"],
    ["training.synthesis.probe"],
    ["bench.kernelbench_eval"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_is_printed_without_a_traceback(command, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [command[0], *command[1:], "--help"])
    with pytest.raises(SystemExit) as stopped:
        runpy.run_module(command[0], run_name="__main__", alter_sys=True)
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m " + " ".join(command)), out[:200]


def test_plots_of_a_folder_without_a_run_are_an_error_with_exit_2(tmp_path, capsys):
    from training.rl.plots import main

    assert main([str(tmp_path / "nowhere")]) == 2
    assert "nowhere/metrics.jsonl does not exist" in capsys.readouterr().err
