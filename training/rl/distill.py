"""Stage 1, distillation: the teacher's first turns at scale, built on the CPU, then supervised fine-tuning on them.

The heuristic teacher needs a GPU only from its `compile` call on: its first turn (`python -m agent.heuristic.analyze
problem.py`, a real analysis on meta tensors) and the turn that writes binding.cpp, kernels/*.cu and model_new.py
from that analysis run anywhere. So every synthesized task gets those turns through the real agent loop, which
stops before the first device tool (agent.loop.Episode's `stop_before`): an unverified partial episode, no
compile or verify observation made up, recorded with stop_reason "distill: stopped before compile" and a `distill`
key on its row. The few hundred verified episodes RFT trains on then teach the rest of the episode.

    python -m training distill-data --tasks TASKS.jsonl --out DISTILL [--data DATA/tasks.jsonl] [--limit N] [--workers W]
    python -m training train CONFIG.yaml --set stages=[distill,rft] --set distill.data=DISTILL/trajectories.jsonl

The split is the data build's (training/rl/data.py): a task whose fingerprint hashes to the held-out side (the same
--held-out fraction and the config's seed) is never distilled, whether or not the teacher solves it, and with
--data neither is any task that build held out. The stage checks it again: it refuses data holding a task the run
holds out. Episodes land in DISTILL/episodes/NAME/ as they finish, so a stopped build continues where it was.
Outputs: DISTILL/trajectories.jsonl (one Trajectory per task the teacher wrote for, in task order) and
DISTILL/summary.json (the counts: held out, refused by the heuristic, written, failed to run; seconds per task).
The prompts are restated in the actor's budget at training time, as RFT's (rft.restate_budget).
"""

import json
import logging
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agent.loop import Episode
from agent.policies import PolicyError
from agent.policies.heuristic import HeuristicPolicy
from agent.trajectory import Trajectory
from sandbox import SandboxError
from sandbox.jsonl import iter_jsonl, write_jsonl
from training.rl.data import distinct, fingerprint_of, held_out_side, teacher_workers

log = logging.getLogger(__name__)

DEVICE_TOOLS = ("compile", "verify", "profile", "submit")  # the episode stops before the first of these
STOP_PREFIX = "distill: "
MARK = "distill"  # the key of a row's marker: {"task", "fingerprint", "partial": True, "verified": False}
REPO = Path(__file__).resolve().parents[2]


class DistillError(ValueError):
    """The distillation data cannot be built or trained on as asked; the message says what to change."""


# -- the build ---------------------------------------------------------------------------------------------------
def held_out_by(data_tasks):
    """The fingerprints a data build's tasks.jsonl (DATA_TASKS) holds out: its `held_out` rows', by the build's
    fingerprint and by the source's."""
    from training.rl.tasks import read_rows

    rows = [r for r in read_rows(data_tasks) if r.get("split") == "held_out"]
    return {fingerprint_of(r) for r in rows} | {source_fingerprint(r["code"]) for r in rows}


def source_fingerprint(code):
    return fingerprint_of({"code": code})


def build(config, rows, out, held_out=0.15, data_tasks=None, workers=0, stop_after=None, say=print):
    """DISTILL (OUT) from ROWS ({name, code[, fingerprint]}) with CONFIG's teacher episode settings; the summary.
    WORKERS episodes at once (0: rft.teacher_workers' rule); none starts after STOP_AFTER seconds."""
    from training.rl.rollouts import episode_config

    out = Path(out)
    tasks, duplicates = distinct(rows)
    if not tasks:
        raise DistillError("no task to distill: the tasks file is empty")
    banned = held_out_by(data_tasks) if data_tasks else set()
    sides = {t.name: _side(t, held_out, config.seed, banned) for t in tasks}
    chosen = [t for t in tasks if sides[t.name] == "train"]
    problems = out / "problems"
    problems.mkdir(parents=True, exist_ok=True)
    episode = episode_config(config, "heuristic")
    todo = [t for t in chosen if stored(out, t) is None]
    workers = workers or teacher_workers(config)
    start, ran = time.monotonic(), []

    def run_one(task):
        if stop_after is not None and time.monotonic() - start > stop_after:
            return None
        path = problems / f"{task.name}.py"
        path.write_text(task.code)
        t0 = time.monotonic()
        try:
            trajectory = first_turns(path, out / "episodes" / task.name, episode)
        except (PolicyError, SandboxError, OSError, ValueError) as exc:
            log.warning("distill: %s failed to run: %s", task.name, exc)
            return f"{task.name}: {exc}"
        ran.append(time.monotonic() - t0)
        say(f"{len(ran)} / {len(todo)}: {task.name}: {trajectory.stop_reason[:100]} ({ran[-1]:.1f} s)")
        return trajectory

    with ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(run_one, todo))
    failures = [r for r in results if isinstance(r, str)]
    left = sum(r is None for r in results)
    done = {t.name: stored(out, t) for t in chosen}
    written = [(t, done[t.name]) for t in chosen if done[t.name] is not None and is_distilled(done[t.name])]
    refused = [done[t.name].stop_reason for t in chosen if done[t.name] is not None and not is_distilled(done[t.name])]
    write_jsonl(out / "trajectories.jsonl", [record(t, trajectory) for t, trajectory in written])
    wall = time.monotonic() - start
    summary = {
        "rows": len(rows),
        "duplicates": duplicates,
        "tasks": len(tasks),
        "held_out": sum(s == "held_out" for s in sides.values()),
        "held_out_by_data": sum(s == "held_out_by_data" for s in sides.values()),
        "held_out_fraction": held_out,
        "seed": config.seed,
        "device": episode.device,
        "train_tasks": len(chosen),
        "written": len(written),
        "refused": len(refused),
        "refusals": dict(Counter(_reason(r) for r in refused).most_common(12)),
        "failed_to_run": len(failures),
        "left": left,
        "complete": left == 0 and not failures,
        "this_call": {
            "episodes": len(ran),
            "seconds": round(wall, 1),
            "seconds_per_task": round(wall / len(ran), 2) if ran else None,
            "episode_seconds_mean": round(sum(ran) / len(ran), 2) if ran else None,
            "workers": workers,
        },
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def _side(task, fraction, seed, banned):
    if held_out_side(task.fingerprint, fraction, seed):
        return "held_out"
    if banned and (task.fingerprint in banned or source_fingerprint(task.code) in banned):
        return "held_out_by_data"
    return "train"


def _reason(stop_reason):
    return stop_reason.splitlines()[0][:100] if stop_reason else "no stop reason"


def first_turns(problem, folder, episode):
    """The heuristic's turns on PROBLEM through the agent loop, up to its first write turn (ended before the compile
    call it makes with it): the trajectory, also saved as FOLDER/trajectory.json. A task the heuristic refuses ends
    with its `policy_error` stop reason instead (saved too, so a rerun does not ask again)."""
    folder = Path(folder)
    trajectory = Episode(
        problem, HeuristicPolicy(tune=False), folder / "workspace", episode, stop_before=DEVICE_TOOLS
    ).run()
    if trajectory.stop_reason.startswith("stopped before "):
        trajectory.stop_reason = STOP_PREFIX + trajectory.stop_reason
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trajectory.json").write_text(trajectory.dumps())
    return trajectory


def stored(out, task):
    """The finished first turns of TASK under OUT, or None."""
    path = Path(out) / "episodes" / task.name / "trajectory.json"
    if not path.is_file():
        return None
    try:
        return Trajectory.loads(path.read_text())
    except (json.JSONDecodeError, KeyError, TypeError):
        return None  # cut by a crash: run it again


def is_distilled(trajectory):
    """Whether TRAJECTORY reached the teacher's write turn (a partial episode stopped before the device)."""
    return trajectory.stop_reason.startswith(STOP_PREFIX + "stopped before ")


def record(task, trajectory):
    """TRAJECTORY's JSONL row: Trajectory.to_json() plus its MARK (Trajectory.from_json ignores it)."""
    return {
        **trajectory.to_json(),
        MARK: {"task": task.name, "fingerprint": task.fingerprint, "partial": True, "verified": False},
    }


# -- the stage ---------------------------------------------------------------------------------------------------
def load(path):
    """[(Trajectory, marker)] of a distill-data trajectories.jsonl; DistillError for any other file."""
    path = Path(path)
    if not path.is_file():
        raise DistillError(f"distill.data {path} does not exist: build it with `python -m training distill-data`")
    out = []
    for number, row in iter_jsonl(path, appending=False):
        if not isinstance(row, dict) or not isinstance(row.get(MARK), dict):
            raise DistillError(
                f"{path}:{number} is not a distill-data row (no {MARK!r} marker): distill.data takes the "
                f"trajectories.jsonl of `python -m training distill-data`; a data build's verified episodes go to "
                f"rft.data"
            )
        out.append((Trajectory.from_json(row), row[MARK]))
    if not out:
        raise DistillError(f"distill.data {path} holds no trajectory: run `python -m training distill-data` again")
    return out


def held_out_fingerprints(run):
    """The fingerprints of the run's held-out tasks: their sources', and the task file's own where its rows
    carry one (a data build's graph fingerprints)."""
    from training.rl.tasks import TaskError, read_rows

    sources = {task.source for task in run.held_out}
    found = {source_fingerprint(s) for s in sources}
    try:
        rows = read_rows(run.config.tasks.source)
    except TaskError:
        return found  # the source moved since the split was recorded: the sources still tell
    return found | {fingerprint_of(r) for r in rows if r["code"] in sources}


def refuse_held_out(run, rows):
    """DistillError when any of ROWS ([(Trajectory, marker)]) is a task the run holds out."""
    banned = held_out_fingerprints(run)
    leaks = [
        marker.get("task") or trajectory.problem
        for trajectory, marker in rows
        if marker.get("fingerprint") in banned or source_fingerprint(trajectory.problem_source) in banned
    ]
    if leaks:
        raise DistillError(
            f"{len(leaks)} of {len(rows)} distillation trajectories are of tasks this run holds out "
            f"({', '.join(leaks[:5])}{' ...' if len(leaks) > 5 else ''}): build the data with the run's split "
            f"(`python -m training distill-data --data DATA/tasks.jsonl` with the data build's --held-out and the "
            f"run's seed) or train on the tasks it was built against (tasks.source)"
        )


def train(run):
    from training.rl.rft import fine_tune

    rows = load(run.config.distill.data)
    refuse_held_out(run, rows)
    actor = run.actor("distill")
    samples = run.samples([trajectory for trajectory, _ in rows])
    return fine_tune(run, "distill", actor, samples, {"trajectories": len(rows)}, {"trajectories"})


# -- the command ---------------------------------------------------------------------------------------------------
def add_arguments(parser):
    parser.add_argument("--tasks", required=True, help="a synthesized dataset or any JSONL of {name, code} problems")
    parser.add_argument("--out", required=True, help="the distillation folder (continued when it exists)")
    parser.add_argument(
        "--config",
        default=str(REPO / "training" / "configs" / "gpu.yaml"),
        help="the run config whose episode section the teacher runs under (default: gpu.yaml, the CUDA target)",
    )
    parser.add_argument(
        "--data",
        help="a data build's tasks.jsonl (python -m training data): the tasks it holds out are left out too",
    )
    parser.add_argument("--held-out", type=float, default=0.15, help="the data build's held-out share (default 0.15)")
    parser.add_argument("--limit", type=int, default=0, help="the first N rows only")
    parser.add_argument("--workers", type=int, default=0, help="episodes at once (default: rft.teacher_workers' rule)")
    parser.add_argument("--stop-after", type=float, help="start no episode after S seconds (run again to go on)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config overrides")


def run(args):
    from training.rl import config as run_config
    from training.rl.config import ConfigError
    from training.rl.tasks import TaskError, read_rows

    if not 0 <= args.held_out < 1:
        print("error: --held-out must be in [0, 1)", file=sys.stderr)
        return 2
    try:
        config = run_config.override(run_config.load(args.config), args.set)
        rows = read_rows(args.tasks)
        summary = build(
            config,
            rows[: args.limit] if args.limit else rows,
            args.out,
            args.held_out,
            args.data,
            args.workers,
            args.stop_after,
        )
    except (ConfigError, TaskError, DistillError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=1))
    return 0
