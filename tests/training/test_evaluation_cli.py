"""`python -m training evaluate` in-process: real CPU episodes of the heuristic in comparison mode, results, resume,
report, and bad input refused with the reason while everything stored stays."""

import json

import pytest

from training.cli import main


def evaluate(*argv):
    return main(["evaluate", *map(str, argv)])


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_an_in_process_comparison_stores_each_episode_reports_side_by_side_and_resumes_without_rerunning(
    tmp_path, evaluation_env, evaluation_problems, evaluation_flags, capsys
):
    problems, out = evaluation_problems("1_Scale_ReLU"), tmp_path / "out"
    assert (
        evaluate("--problems", problems, "--out", out, "--workers", 2, "--compare", "strict,relaxed", *evaluation_flags)
        == 0
    )
    results = {r["arm"]: r for r in lines(out / "results.jsonl")}
    assert sorted(results) == ["relaxed", "strict"]
    for arm, r in results.items():
        assert r["key"] == "level1/1_Scale_ReLU" and r["policy"] == "heuristic" and r["error"] == ""
        assert r["verdict"]["correct"] and r["stop_reason"] == "submitted" and r["turns"] >= 3 and r["wall_s"] > 0
        trajectory = json.loads((out / r["trajectory"]).read_text())
        assert trajectory["verdict"] == r["verdict"] and len(trajectory["turns"]) == r["turns"]
        assert r["trajectory"] == f"episodes/{arm}/level1/1_Scale_ReLU/trajectory.json"
        assert "ModelNew" in (out / f"episodes/{arm}/level1/1_Scale_ReLU/solution.py").read_text()
    spec = json.loads((out / "run.json").read_text())
    assert spec["arms"]["strict"]["strict"] is True and spec["arms"]["relaxed"]["strict"] is False
    assert spec["arms"]["strict"]["time_budget_s"] == 0.2 and spec["policy"] == "heuristic"

    metrics = json.loads((out / "metrics.json").read_text())
    for arm in ("strict", "relaxed"):
        overall = metrics["arms"][arm]["overall"]
        assert overall["problems"] == 1 and overall["correct_rate"] == 1.0
        assert overall["compiled"]["measured"] is False  # --no-compiled: not measured, not 0%
    assert metrics["reference"]["levels"]["3"]["fast_1_compiled"] == 0.92
    md = (out / "metrics.md").read_text()
    assert "| level | metric | `relaxed` | `strict` |" in md
    assert "| level 1 | correct rate | 100.0% | 100.0% |" in md
    assert "## Sandbox setting `strict`" in md and "| level 1 | 1 | 1 (100.0%) |" in md
    assert (
        "*CUDA Agent (paper, published; not measured here)*: faster than torch.compile | 100.0% | 100.0% | 92.0%" in md
    )

    capsys.readouterr()
    before = (out / "results.jsonl").read_text()
    assert (
        evaluate("--problems", problems, "--out", out, "--resume", "--compare", "strict,relaxed", *evaluation_flags)
        == 0
    )
    assert "0 episode(s) to run, 2 finished already" in capsys.readouterr().out
    assert (out / "results.jsonl").read_text() == before


def test_a_run_stopped_by_its_time_budget_leaves_a_folder_that_only_the_same_evaluation_resumes(
    tmp_path, evaluation_env, evaluation_problems, evaluation_flags, capsys
):
    problems, out = evaluation_problems(), tmp_path / "out"
    assert evaluate("--problems", problems, "--out", out, "--stop-after", 0, *evaluation_flags) == 0
    assert "3 episode(s) not started" in capsys.readouterr().out
    assert not (out / "results.jsonl").exists() and (out / "run.json").exists()

    assert evaluate("--problems", problems, "--out", out, *evaluation_flags) == 2
    assert "already holds an evaluation: add --resume" in capsys.readouterr().err
    assert evaluate("--problems", problems, "--out", out, "--resume", *evaluation_flags, "--max-turns", 9) == 2
    assert "max_turns: 8 there, 9 now" in capsys.readouterr().err
    assert evaluate("--problems", problems, "--out", out, "--resume", "--sandbox", "relaxed", *evaluation_flags) == 2
    assert "arms.relaxed" in capsys.readouterr().err
    assert json.loads((out / "run.json").read_text())["max_turns"] == 8


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--levels", "x"], "--levels takes"),
        (["--levels", "3"], "no problem of"),
        (["--names", "9_Nope"], "no problem named 9_Nope"),
        (["--shard", "5/4"], "--shard takes"),
        (["--limit", "0"], "--limit takes"),
        (["--workers", "0"], "--workers takes 1 or more"),
        (["--sandbox", "lenient"], "unknown sandbox setting 'lenient'"),
        (["--sandbox", "strict+relaxed"], "sets strict twice"),
        (["--compare", "strict"], "--compare takes two or more"),
        (["--compare", "strict,strict"], "lists strict twice"),
        (["--sandbox-option", "trials=many"], "trials takes a int"),
        (["--sandbox-option", "trials=0"], "trials must be at least 1"),
        (["--sandbox-option", "nope=1"], "KEY=VALUE with KEY one of"),
    ],
)
def test_it_rejects_bad_flags_with_the_reason_and_creates_nothing(
    tmp_path, evaluation_env, evaluation_problems, evaluation_flags, capsys, flags, message
):
    out = tmp_path / "out"
    assert evaluate("--problems", evaluation_problems(), "--out", out, *evaluation_flags, *flags) == 2
    assert message in capsys.readouterr().err
    assert not (out / "run.json").exists()


def test_it_rejects_a_missing_problems_file_and_a_folder_that_is_not_an_evaluation(
    tmp_path, evaluation_env, evaluation_flags, capsys
):
    assert evaluate("--problems", tmp_path / "none.jsonl", "--out", tmp_path / "a", *evaluation_flags) == 2
    assert "none.jsonl does not exist" in capsys.readouterr().err
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "notes.txt").write_text("mine")
    problems = tmp_path / "p.jsonl"
    problems.write_text(json.dumps({"level": 1, "problem_id": 1, "name": "1_A", "code": "import torch\n"}) + "\n")
    assert evaluate("--problems", problems, "--out", tmp_path / "b", *evaluation_flags) == 2
    assert "is not empty and holds no evaluation" in capsys.readouterr().err
    assert (tmp_path / "b" / "notes.txt").read_text() == "mine"
    assert evaluate("--out", tmp_path / "b", "--report-only") == 2
    assert "run.json is unreadable" in capsys.readouterr().err


def test_report_only_rewrites_the_report_from_stored_results(
    tmp_path, evaluation_env, evaluation_problems, evaluation_flags, capsys
):
    out = tmp_path / "out"
    assert evaluate("--problems", evaluation_problems(), "--out", out, "--stop-after", 0, *evaluation_flags) == 0
    result = {
        "arm": "strict",
        "key": "level3/4_Done",
        "level": 3,
        "problem_id": 4,
        "name": "4_Done",
        "problem_sha256": "0",
        "turns": 5,
        "wall_s": 60.0,
        "verdict": {
            "status": "ok",
            "correct": True,
            "reward": 3,
            "eager_ms": 2.0,
            "compiled_ms": 1.5,
            "speedup_vs_eager": 4.0,
            "speedup_vs_compiled": 3.0,
        },
    }
    (out / "results.jsonl").write_text(json.dumps(result) + '\n{"cut short by a cr')
    assert evaluate("--out", out, "--report-only") == 0
    level = json.loads((out / "metrics.json").read_text())["arms"]["strict"]["levels"]["3"]
    assert level["compiled"]["fast_p"]["2.0"] == 1.0 and level["compiled"]["fast_p"]["3.0"] == 0.0
    assert "| level 3 | 1 | 1 (100.0%) | 100.0% | 100.0% | 4.00x / 4.00x | 3.00x / 3.00x |" in capsys.readouterr().out
    # The stored verdict names no schedule: it was rewarded by the milestones, and the report says so.
    assert "Rewards under the `milestone` schedule:" in (out / "metrics.md").read_text()


def test_retime_measures_the_stored_solutions_again_keeps_the_old_speedups_and_skips_what_is_current_and_rerun_runs_named_episodes_again(
    tmp_path, evaluation_env, evaluation_problems, evaluation_flags, capsys
):
    problems, out = evaluation_problems("1_Scale_ReLU"), tmp_path / "out"
    assert evaluate("--problems", problems, "--out", out, *evaluation_flags) == 0
    first = lines(out / "results.jsonl")[-1]
    assert first["verdict"]["correct"] and first["extra"]["timing_protocol"] >= 2
    capsys.readouterr()
    assert evaluate("--retime", "--problems", problems, "--out", out) == 0  # measured under the current protocol
    assert "0 stored correct solution(s) to re-time" in capsys.readouterr().out

    # As an evaluation before the timing lock stored it: no protocol recorded.
    del first["extra"]["timing_protocol"]
    (out / "results.jsonl").write_text(json.dumps(first) + "\n")
    assert evaluate("--retime", "--problems", problems, "--out", out, "--workers", 1) == 0
    assert "1 stored correct solution(s) to re-time" in capsys.readouterr().out
    stored = lines(out / "results.jsonl")
    assert len(stored) == 2 and stored[-1]["key"] == first["key"] and stored[-1]["turns"] == first["turns"]
    retimed = stored[-1]["extra"]["retimed"]
    assert retimed["previous_speedup_vs_eager"] == first["verdict"]["speedup_vs_eager"] and retimed["protocol"] >= 2
    assert stored[-1]["verdict"]["correct"] and stored[-1]["verdict"]["runtime_ms"] > 0
    # The stored solution.py itself was measured again: a plain KernelBench export (sources inline, load_inline)
    # hashes as that file, where the episode's verdict hashed its workspace; the episode's hash is kept beside it.
    from sandbox.solution import Solution

    solution_py = out / "episodes" / "strict" / first["key"] / "solution.py"
    assert stored[-1]["verdict"]["solution_hash"] in (
        first["verdict"]["solution_hash"],
        Solution.read(solution_py).sha256,
    )
    assert retimed["previous_solution_hash"] == first["verdict"]["solution_hash"]

    assert evaluate("--retime", "--problems", problems, "--out", out) == 0  # nothing stale: nothing runs
    assert "0 stored correct solution(s) to re-time" in capsys.readouterr().out
    assert len(lines(out / "results.jsonl")) == 2
    assert evaluate("--retime", "--out", out) == 2  # without --problems: refused, nothing lost
    assert len(lines(out / "results.jsonl")) == 2

    # --rerun: the named problem's episode runs again (after the policy changed); the newest result is reported.
    assert evaluate("--problems", problems, "--out", out, "--resume", "--rerun", *evaluation_flags) == 2
    assert "--rerun needs --resume and the problems to run again" in capsys.readouterr().err
    assert (
        evaluate(
            "--problems", problems, "--out", out, "--resume", "--rerun", "--names", "1_Scale_ReLU", *evaluation_flags
        )
        == 0
    )
    assert "1 episode(s) to run, 0 finished already" in capsys.readouterr().out
    stored = lines(out / "results.jsonl")
    assert len(stored) == 3 and stored[-1]["turns"] >= 3 and "retimed" not in stored[-1]["extra"]
    assert stored[-1]["finished_at"] >= stored[0]["finished_at"] and stored[-1]["verdict"]["correct"]
