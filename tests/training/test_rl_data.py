"""The data build (training/rl/data.py): tasks de-duplicated by fingerprint, teacher trajectories over the threshold
kept, and a split by task whose held-out side never leaks into training, neither as a task nor as a trajectory,
nor through a duplicate under another name; the run's task loader keeps the build's split."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.trajectory import Trajectory
from training.rl import data
from training.rl.config import TasksConfig
from training.rl.tasks import load

ROOT = Path(__file__).resolve().parents[2]


def source(k):
    return f"import torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x * {k}\n"


def teacher(name, reward):
    return Trajectory(
        problem=f"{name}.py", device="cpu", policy="heuristic", verdict={"reward": reward, "correct": reward >= 1}
    )


def rows(n):
    """N synthesized-style rows over N // 2 graphs: each graph twice, under two names (a second row of one graph
    differs only in its docstring, as a renamed duplicate would)."""
    out = []
    for k in range(n // 2):
        out.append({"name": f"op_{k}", "code": source(k), "fingerprint": f"graph:{k:04d}"})
        out.append({"name": f"renamed_{k}", "code": '"""again"""\n' + source(k), "fingerprint": f"graph:{k:04d}"})
    return out


def test_the_split_never_leaks_a_held_out_task_into_training():
    tasks, duplicates = data.distinct(rows(600))
    assert duplicates == 300 and len({t.fingerprint for t in tasks}) == len(tasks) == 300
    # the teacher solves two tasks in three, at rewards 1, 2 or 3; it fails the others
    episodes = {t.name: teacher(t.name, [1.0, 2.0, -1.0, 3.0, -1.0, 1.0][i % 6]) for i, t in enumerate(tasks)}
    kept = data.split(tasks, episodes, threshold=1.0, held_out=0.2)
    sides = {side: [t for t in tasks if t.split == side] for side in data.SPLITS}
    held = {t.fingerprint for t in sides["held_out"]}
    assert held and not held & {t.fingerprint for t in sides["train"]}
    assert 0.1 < len(held) / (len(sides["train"]) + len(held)) < 0.3
    # RFT's trajectories are the training tasks' alone, each over the threshold
    assert {Path(t.problem).stem for t in kept} == {t.name for t in sides["train"]}
    assert all(t.verdict["reward"] >= 1.0 for t in kept)
    # a task the teacher failed is neither trained on nor held out
    assert all(t.teacher_reward < 1.0 for t in sides["unreached"]) and len(sides["unreached"]) == 100


def test_a_tasks_side_stays_when_the_dataset_grows():
    small, _ = data.distinct(rows(40))
    large, _ = data.distinct(rows(400))
    for tasks in (small, large):
        data.split(tasks, {t.name: teacher(t.name, 2.0) for t in tasks}, threshold=1.0, held_out=0.3)
    before = {t.fingerprint: t.split for t in small}
    assert before == {t.fingerprint: t.split for t in large if t.fingerprint in before}


def test_the_run_loads_the_builds_split_and_trains_on_unreached_tasks_only_when_asked(tmp_path):
    tasks, _ = data.distinct(rows(40))
    data.split(tasks, {t.name: teacher(t.name, -1.0 if i % 4 == 0 else 1.0) for i, t in enumerate(tasks)}, 1.0, 0.3)
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t.to_json()) + "\n" for t in tasks))
    train, held_out = load(TasksConfig(source=str(path), held_out=0.9), tmp_path / "run-tasks")
    assert sorted(t.name for t in held_out) == sorted(t.name for t in tasks if t.split == "held_out")
    assert sorted(t.name for t in train) == sorted(t.name for t in tasks if t.split == "train")
    both, _ = load(TasksConfig(source=str(path), unreached=True), tmp_path / "with-unreached")
    assert len(both) == len(train) + sum(t.split == "unreached" for t in tasks)
    assert not {t.name for t in both} & {t.name for t in held_out}


@pytest.mark.slow
def test_the_data_command_runs_the_teacher_and_keeps_held_out_trajectories_out(tmp_path):
    toy = [json.loads(line) for line in (ROOT / "training/configs/toy_tasks.jsonl").read_text().splitlines()]
    # the toy tasks twice, the second time under other names: four rows, two tasks
    source_rows = toy + [{**row, "name": row["name"] + "_again"} for row in toy]
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text("".join(json.dumps(r) + "\n" for r in source_rows))
    fingerprints = [data.fingerprint_of(r) for r in toy]
    # a seed that puts the two tasks on different sides, so that both are exercised
    seed = next(
        s
        for s in range(100)
        if data.held_out_side(fingerprints[0], 0.5, s) != data.held_out_side(fingerprints[1], 0.5, s)
    )
    out = tmp_path / "data"
    command = [
        sys.executable,
        "-m",
        "training",
        "data",
        "training/configs/toy.yaml",
        "--tasks",
        str(tasks_file),
        "--out",
        str(out),
        "--held-out",
        "0.5",
        "--set",
        f"seed={seed}",
        "--set",
        "rollouts.workers=2",
    ]
    env = {**os.environ, "KS_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["duplicates"] == 2 and summary["tasks"] == 2 and summary["complete"]
    assert summary["splits"] == {"train": 1, "held_out": 1}, summary
    assert summary["this_call"]["episodes"] == 2 and summary["this_call"]["per_minute"] > 0, summary
    built = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    (held,) = [r["name"] for r in built if r["split"] == "held_out"]
    (trained,) = [r["name"] for r in built if r["split"] == "train"]
    kept = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert [Path(t["problem"]).stem for t in kept] == [trained] and kept[0]["verdict"]["reward"] >= 1
    # run again: every episode is stored, nothing runs, the same data comes out
    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "episodes:" not in again.stdout
    assert [json.loads(line)["split"] for line in (out / "tasks.jsonl").read_text().splitlines()] == [
        r["split"] for r in built
    ]
    assert held != trained


def test_finishing_a_build_keeps_the_tasks_whose_episode_is_done_and_runs_nothing(tmp_path):
    from training.rl import config as run_config

    config = run_config.load(ROOT / "training/configs/toy.yaml")
    source_rows = [{"name": f"op_{k}", "code": source(k), "fingerprint": f"graph:{k:04d}"} for k in range(6)]
    out = tmp_path / "data"
    tasks, _ = data.distinct(source_rows)
    for task, reward in zip(tasks[:4], (1.0, 2.0, -1.0, 3.0)):  # four episodes done, two never run
        folder = data.episode_folder(out, task)
        folder.mkdir(parents=True)
        (folder / "trajectory.json").write_text(json.dumps(teacher(task.name, reward).to_json()))
    said = []
    summary = data.build(config, source_rows, out, held_out=0.0, finish=True, say=said.append)
    assert not said, said  # no chunk of episodes ran
    assert summary["complete"] and summary["not_run"] == 2 and summary["tasks"] == summary["episodes"] == 4
    assert summary["this_call"]["episodes"] == 0 and summary["this_call"]["per_minute"] == 0.0
    built = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert [r["name"] for r in built] == ["op_0", "op_1", "op_2", "op_3"]
    assert [r["split"] for r in built] == ["train", "train", "unreached", "train"]
    kept = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert [Path(t["problem"]).stem for t in kept] == ["op_0", "op_1", "op_3"]


class TimedEpisodes:
    """Stands in for Rollouts.episode: each task's episode takes the seconds its name says, and is logged."""

    def __init__(self):
        self.started, self.ended = {}, {}

    def episode(self, task, who, out):
        import time

        self.started[task.name] = time.monotonic()
        time.sleep(float(task.name.split("_")[1]))
        self.ended[task.name] = time.monotonic()
        return f"{task.name}: failed on purpose" if task.name.startswith("fails") else teacher(task.name, 1.0)


def test_the_teachers_episodes_stay_in_flight_and_none_starts_once_the_time_is_up(tmp_path):
    from training.rl.tasks import Task

    names = ["slow_1.2", "quick_0.1", "quick_0.1", "fails_0.1", "quick_0.1", "late_0.1"]
    jobs = [(Task(f"{name}", f"{name}.py"), tmp_path / f"{i}") for i, name in enumerate(names)]
    episodes, said = TimedEpisodes(), []
    import time

    progress = data.Progress(0, len(jobs), time.monotonic(), 0.9, said.append)
    failures = data._run_streaming(episodes, jobs[:5], 2, progress)
    # Two at a time: the quick ones run one after another beside the slow one, which holds back none of them.
    assert episodes.ended["quick_0.1"] < episodes.ended["slow_1.2"]
    assert failures == ["fails_0.1: failed on purpose"]
    assert progress.done == 5 and said[-1].startswith("episodes: 5 / 6")
    # The time is up (0.9 s): what is left does not start, and says so.
    failures = data._run_streaming(episodes, jobs[5:], 2, progress)
    assert "late_0.1" not in episodes.started and failures == []
    assert said[-1].startswith("stopped after") and "1 episodes left" in said[-1]


def test_the_teacher_runs_three_quarters_of_the_cores_at_once_unless_told(tmp_path):
    from training.rl import config as run_config

    config = run_config.load(ROOT / "training/configs/toy.yaml")
    assert data.teacher_workers(config) == max(1, 3 * (os.cpu_count() or 2) // 4)
    told = run_config.override(config, ["rft.teacher_workers=3"])
    assert data.teacher_workers(told) == 3
    with pytest.raises(run_config.ConfigError, match="teacher_workers"):
        run_config.override(config, ["rft.teacher_workers=-1"])
