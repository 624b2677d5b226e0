"""Distillation data: the teacher's real analysis and write turns, built on the CPU, never of a held-out task; the
distill stage fine-tunes a tiny actor on them and refuses data that holds a task the run holds out."""

import json
import shutil
import textwrap
from pathlib import Path

import pytest
import torch

from agent.loop import SYSTEM
from agent.trajectory import Trajectory
from training.rl import config as run_config
from training.rl import distill
from training.rl.data import distinct, held_out_side, split
from training.rl.distill import DistillError
from training.rl.rft import sft_loss
from training.rl.runtime import Run
from training.rl.tasks import read_rows

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "bench" / "results" / "rl-pipeline-h100-2026-11-28" / "tasks.jsonl"
HELD_OUT = 0.5  # a share at which a few tries find fingerprints on either side

PROBLEM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return {body}

def get_inputs():
    return [torch.randn({shape})]

def get_init_inputs():
    return []
"""
PROBLEMS = {  # name: (forward's expression, input shape); the inverse has no kernel, the sigmoid is held out
    "Scale_ReLU": ("torch.relu(x) * 2.0", "64, 256"),
    "Softmax": ("torch.softmax(x, dim=-1)", "32, 128"),
    "Batched_Inverse": ("torch.linalg.inv(x)", "8, 4, 4"),
    "Held_Sigmoid": ("torch.sigmoid(x) + 1.0", "16, 64"),
}


def fingerprint(name, held):
    """A fingerprint for NAME on the wanted side of the split (seed 0, HELD_OUT)."""
    k = 0
    while held_out_side(f"graph:{name}-{k}", HELD_OUT) != held:
        k += 1
    return f"graph:{name}-{k}"


def rows():
    return [
        {
            "name": name,
            "code": textwrap.dedent(PROBLEM.format(body=body, shape=shape)).lstrip(),
            "fingerprint": fingerprint(name, held=name.startswith("Held")),
        }
        for name, (body, shape) in PROBLEMS.items()
    ]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(folder, summary, rows): a real build of the four tasks for the CUDA target (gpu.yaml's episodes)."""
    out = tmp_path_factory.mktemp("distill")
    config = run_config.load(ROOT / "training" / "configs" / "gpu.yaml")
    summary = distill.build(config, rows(), out, held_out=HELD_OUT, workers=3, say=lambda line: None)
    return out, summary, [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]


def test_each_trajectory_is_the_real_analysis_then_the_write_turn_and_ends_unverified(built):
    out, summary, records = built
    assert sorted(r["distill"]["task"] for r in records) == ["Scale_ReLU", "Softmax"]
    for row in records:
        trajectory = Trajectory.from_json(row)
        assert Trajectory.from_json(trajectory.to_json()).to_json() == trajectory.to_json()
        assert row["distill"]["partial"] and not row["distill"]["verified"]
        assert trajectory.stop_reason == "distill: stopped before compile"
        assert trajectory.verdict is None and trajectory.best is None and trajectory.device == "cuda"
        analysis, write = trajectory.turns
        (bash,) = analysis.tool_calls
        assert bash.arguments["command"] == "python -m agent.heuristic.analyze problem.py"
        assert bash.observation.startswith("exit code 0") and "ANALYSIS" in bash.observation
        *files, compile_call = write.tool_calls
        assert {c.name for c in files} == {"write_file"} and compile_call.name == "compile"
        assert "model_new.py" in {c.arguments["path"] for c in files}
        assert any(c.arguments["path"].endswith(".cu") for c in files)
        assert all(c.observation.startswith("wrote ") for c in files)
        assert compile_call.observation == "" and compile_call.verdict is None  # not run, nothing made up
        assert (out / "episodes" / row["distill"]["task"] / "trajectory.json").is_file()


def test_refused_and_held_out_tasks_are_counted_and_left_out(built):
    out, summary, records = built
    assert summary["tasks"] == 4 and summary["held_out"] == 1 and summary["train_tasks"] == 3
    assert summary["written"] == 2 and summary["refused"] == 1 and summary["failed_to_run"] == 0
    assert any("no kernel written" in reason for reason in summary["refusals"]), summary["refusals"]
    assert not (out / "episodes" / "Held_Sigmoid").exists()
    assert summary["complete"] and summary["this_call"]["seconds_per_task"] > 0


def test_a_second_build_runs_nothing_and_a_data_builds_held_out_task_is_left_out_too(built, tmp_path):
    out = tmp_path / "distill"
    shutil.copytree(built[0], out)
    data_tasks = tmp_path / "tasks.jsonl"
    held = [dict(row, split="held_out") if row["name"] == "Softmax" else dict(row, split="train") for row in rows()]
    data_tasks.write_text("".join(json.dumps(row) + "\n" for row in held))
    config = run_config.load(ROOT / "training" / "configs" / "gpu.yaml")
    again = distill.build(config, rows(), out, HELD_OUT, data_tasks=data_tasks, say=lambda line: None)
    assert again["this_call"]["episodes"] == 0 and again["held_out_by_data"] == 1
    assert [marker["task"] for _, marker in distill.load(out / "trajectories.jsonl")] == ["Scale_ReLU"]


def test_no_task_the_data_build_could_hold_out_is_ever_distilled():
    """On the 1,501 synthesized tasks: whatever the teacher's outcome, the data build's held-out set and the tasks
    the distillation build keeps are disjoint, and together with the rest of the held-out side they are all."""

    tasks, _ = distinct(read_rows(TASKS))
    kept = {t.name for t in tasks if distill._side(t, 0.15, 0, set()) == "train"}
    solved = {t.name: Trajectory("p", "cuda", "heuristic", verdict={"reward": 1.0}) for t in tasks}
    split(tasks, solved, 1.0, 0.15)
    held = {t.name for t in tasks if t.split == "held_out"}
    assert held and kept and not held & kept
    assert len(held) + len(kept) == len(tasks)
    assert 0.1 < len(held) / len(tasks) < 0.2


@pytest.fixture
def fresh_accelerator():
    """accelerate keeps one process-wide state: another test's setting must not reach this run, nor this one leave."""
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    yield
    AcceleratorState._reset_state(reset_partial_state=True)


@pytest.fixture
def tiny_run(built, tmp_path, fresh_accelerator):
    """(run, data): a toy-sized actor on the data build's split (Held_Sigmoid held out) and distill data of the
    build's trajectories without SKILL.md in their system message (a CPU trains on the rest in seconds)."""
    _, _, records = built
    tasks = tmp_path / "tasks.jsonl"
    sides = [dict(row, split="held_out" if row["name"].startswith("Held") else "train") for row in rows()]
    tasks.write_text("".join(json.dumps(row) + "\n" for row in sides))
    short = [{**r, "messages": [{"role": "system", "content": SYSTEM}, *r["messages"][1:]]} for r in records]
    data = tmp_path / "distill.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in short))
    config = run_config.override(
        run_config.load(ROOT / "training" / "configs" / "toy.yaml"),
        [
            f"run_dir={tmp_path / 'run'}",
            f"tasks.source={tasks}",
            "stages=[distill]",
            "model={hidden_size: 32, layers: 1, heads: 2, intermediate_size: 64, vocab_size: 1024, "
            "max_positions: 8192}",
            f"distill.data={data}",
            "distill.epochs=1",
            "distill.lr=1.0e-2",
            "distill.batch_size=1",
        ],
    )
    return Run(config, quiet=True), data


def mean_loss(run, actor, samples):
    with torch.no_grad():
        return sum(sft_loss(actor.eval(), run.batch(samples=[s])).item() for s in samples) / len(samples)


def test_one_distill_epoch_lowers_the_loss_on_the_policy_tokens(tiny_run):
    run, _ = tiny_run
    assert [t.name for t in run.held_out] == ["Held_Sigmoid"]
    samples = run.samples([t for t, _ in distill.load(run.config.distill.data)])
    before = mean_loss(run, run.actor("distill"), samples)
    actor = distill.train(run)
    after = mean_loss(run, actor, samples)
    assert after < before - 0.5, (before, after)
    (record,) = [json.loads(line) for line in (run.dir / "metrics.jsonl").read_text().splitlines()]
    assert record["stage"] == "distill" and record["trajectories"] == 2 and record["policy_tokens"] > 0


def test_the_stage_refuses_data_holding_a_task_the_run_holds_out(tiny_run):
    run, data = tiny_run
    row = json.loads(data.read_text().splitlines()[0])
    held = next(r for r in rows() if r["name"] == "Held_Sigmoid")
    leak = {**row, "problem_source": held["code"], "distill": {**row["distill"], "task": "renamed"}}
    data.write_text(data.read_text() + json.dumps(leak) + "\n")
    with pytest.raises(DistillError, match="1 of 3 distillation trajectories are of tasks this run holds out"):
        distill.train(run)
    assert not (run.dir / "checkpoints" / "distill").exists()
