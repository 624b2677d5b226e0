"""The distillation data of a run, built at scale: synthesized tasks, de-duplicated by task fingerprint, a teacher
episode each (the heuristic policy), the trajectories over the RFT threshold kept, and the tasks split with a
held-out set whose trajectories the actor never sees.

    python -m training data CONFIG.yaml --tasks TASKS.jsonl --out DATA [--held-out 0.15] [--stop-after S]
    python -m training train CONFIG.yaml --set tasks.source=DATA/tasks.jsonl --set rft.data=DATA/trajectories.jsonl

The run config gives the episodes' settings (episode.*: device, turns, sandbox options; rollouts.*: threads here
or jobs on the RQ queue). Episodes land in DATA/episodes/NAME/ as they finish, so a stopped build (--stop-after,
a lost machine) continues where it was. Outputs:
- DATA/tasks.jsonl: one row per distinct task: name, code, fingerprint, the teacher's reward and its split:
  `train`, `held_out` (drawn among the tasks the teacher solved, so the held-out correct rate measures what could
  be learned) or `unreached` (the teacher failed it: not a training task unless tasks.unreached is set);
- DATA/trajectories.jsonl: the kept trajectories of training tasks only (RFT's data);
- DATA/summary.json: the counts at each stage and the reward distribution.

The split is by task fingerprint (the synthesizer's normalized op-graph hash, else the source's syntax tree):
two rows of one graph are one task, and a task's side is decided by a hash of its fingerprint alone, so it stays
on its side as the dataset grows.
"""

import hashlib
import json
import logging
import os
import re
import sys
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path

from agent.trajectory import Trajectory
from sandbox.jsonl import write_jsonl

log = logging.getLogger(__name__)

SPLITS = ("train", "held_out", "unreached")


class DataError(ValueError):
    """The data cannot be built as asked; the message says what to change."""


@dataclass
class TaskRow:
    name: str
    code: str
    fingerprint: str
    split: str = ""
    teacher_reward: float | None = None

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, data):
        return cls(**{k: data[k] for k in ("name", "code", "fingerprint", "split", "teacher_reward") if k in data})


def fingerprint_of(row):
    """The row's fingerprint: the synthesizer's (graph:...), else a hash of the source's syntax tree."""
    from training.synthesis.dedup import FingerprintError, source_fingerprint

    if row.get("fingerprint"):
        return row["fingerprint"]
    try:
        return source_fingerprint(row["code"])
    except FingerprintError:
        return "text:" + hashlib.sha256(row["code"].encode()).hexdigest()[:32]


def distinct(rows):
    """TaskRows of ROWS ({"name", "code"[, "fingerprint"]}), the first of each fingerprint kept, names made unique
    file names; and how many duplicates were dropped."""
    seen, taken, out = set(), set(), []
    for row in rows:
        fp = fingerprint_of(row)
        if fp in seen:
            continue
        seen.add(fp)
        name = base = re.sub(r"[^A-Za-z0-9_]+", "_", str(row["name"]))[:80]
        n = 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name)
        out.append(TaskRow(name, row["code"], fp))
    return out, len(rows) - len(out)


def held_out_side(fingerprint, fraction, seed=0):
    """Whether the task of FINGERPRINT is held out: a hash of the fingerprint alone, so the side never changes."""
    digest = hashlib.sha256(f"{seed}:{fingerprint}".encode()).hexdigest()
    return int(digest[:12], 16) / 16**12 < fraction


def split(tasks, trajectories, threshold, held_out, seed=0):
    """Each task's split and teacher reward set from TRAJECTORIES ({name: Trajectory or None}); returns the kept
    trajectories of training tasks, in TASKS' order. A task the teacher solved (reward >= THRESHOLD) is held out
    by its fingerprint's hash; one it did not is `unreached`."""
    from training.rl.tokens import episode_reward

    kept = []
    for task in tasks:
        trajectory = trajectories.get(task.name)
        task.teacher_reward = episode_reward(trajectory) if trajectory is not None else None
        reached = task.teacher_reward is not None and task.teacher_reward >= threshold
        if not reached:
            task.split = "unreached"
        elif held_out_side(task.fingerprint, held_out, seed):
            task.split = "held_out"
        else:
            task.split = "train"
            kept.append(trajectory)
    return kept


def episode_folder(out, task):
    return Path(out) / "episodes" / task.name


def stored(out, task):
    """The finished teacher episode of TASK under OUT, or None."""
    path = episode_folder(out, task) / "trajectory.json"
    if not path.is_file():
        return None
    try:
        return Trajectory.from_json(json.loads(path.read_text()))
    except (json.JSONDecodeError, KeyError, TypeError):
        return None  # cut by a crash: run it again


def build(config, rows, out, held_out=0.15, threshold=None, stop_after=None, say=print, finish=False):
    """Build DATA (OUT) from ROWS with CONFIG's episode settings; returns the summary. With STOP_AFTER seconds, no
    chunk of episodes starts after that (run again to continue). FINISH: run no more episodes and complete the data
    with the tasks whose episode is done (the others are left out of it, counted as `not_run`)."""
    from training.rl.rollouts import Rollouts
    from training.rl.tasks import Task

    out = Path(out)
    threshold = config.rft.threshold if threshold is None else threshold
    tasks, duplicates = distinct(rows)
    if not tasks:
        raise DataError("no task to build from: the tasks file is empty")
    problems = out / "problems"
    problems.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        (problems / f"{task.name}.py").write_text(task.code)
    rollouts = Rollouts(config, out, tokenizer=None)
    start = time.monotonic()
    todo = [] if finish else [t for t in tasks if stored(out, t) is None]
    jobs = [(Task(t.name, str(problems / f"{t.name}.py")), episode_folder(out, t)) for t in todo]
    progress = Progress(len(tasks) - len(todo), len(tasks), start, stop_after, say)
    if config.rollouts.backend == "rq":
        at_once = max(1, config.rollouts.workers) * 4
        failures = _run_in_chunks(rollouts, jobs, at_once, progress)
    else:
        at_once = teacher_workers(config)
        failures = _run_streaming(rollouts, jobs, at_once, progress)
    trajectories = {t.name: stored(out, t) for t in tasks}
    not_run = 0
    if finish:
        not_run = sum(t is None for t in trajectories.values())
        tasks = [t for t in tasks if trajectories[t.name] is not None]
    done = sum(t is not None for t in trajectories.values())
    kept = split(tasks, trajectories, threshold, held_out, config.seed)
    write_jsonl(out / "tasks.jsonl", [t.to_json() for t in tasks])
    write_jsonl(out / "trajectories.jsonl", [t.to_json() for t in kept])
    rewards = [t.teacher_reward for t in tasks if t.teacher_reward is not None]
    summary = {
        "rows": len(rows),
        "duplicates": duplicates,
        "tasks": len(tasks),
        "episodes": done,
        "episodes_left": len(tasks) - done,
        "not_run": not_run,
        "failed_to_run": len(failures),
        "threshold": threshold,
        "splits": dict(Counter(t.split for t in tasks)),
        "kept_trajectories": len(kept),
        "teacher_rewards": {f"{k:g}": v for k, v in sorted(Counter(rewards).items())},
        "complete": done == len(tasks),
        # This call's episodes and their rate (the teacher's throughput; 0 when it ran none).
        "this_call": _rate(progress.ran(), time.monotonic() - start, at_once),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


class Progress:
    """The build's episodes: how many are done, whether STOP_AFTER seconds from START have passed, lines for SAY."""

    def __init__(self, done, total, start, stop_after, say):
        self.done, self.total, self.start, self.stop_after, self.say = done, total, start, stop_after, say
        self.first = done  # done before this call

    def ran(self):
        """The episodes this call has run."""
        return self.done - self.first

    def out_of_time(self):
        return self.stop_after is not None and time.monotonic() - self.start > self.stop_after

    def finished(self, count):
        self.done += count
        elapsed = time.monotonic() - self.start
        self.say(f"episodes: {self.done} / {self.total} ({elapsed:.0f} s)")

    def stopped(self, left):
        self.say(f"stopped after {time.monotonic() - self.start:.0f} s: {left} episodes left; run again to go on")


def _rate(episodes, seconds, at_once):
    per_minute = round(60.0 * episodes / seconds, 2) if episodes and seconds > 0 else 0.0
    return {"episodes": episodes, "seconds": round(seconds, 1), "per_minute": per_minute, "at_once": at_once}


def teacher_workers(config):
    """The teacher's episodes at once: rft.teacher_workers, or three quarters of the host's cores when it is 0."""
    return config.rft.teacher_workers or max(1, 3 * (os.cpu_count() or 2) // 4)


def _run_streaming(rollouts, jobs, workers, progress):
    """JOBS ((task, folder) pairs) as the teacher's episodes, WORKERS at once, a new one started as each finishes
    (none after the progress's time is up): no episode waits for the slowest of a batch. The failures' errors."""
    failures, queue, running = [], list(jobs), set()
    with ThreadPoolExecutor(workers) as pool:
        while queue or running:
            while queue and len(running) < workers and not progress.out_of_time():
                task, folder = queue.pop(0)
                running.add(pool.submit(rollouts.episode, task, "heuristic", folder))
            if not running:
                break
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            failures += [f.result() for f in finished if isinstance(f.result(), str)]
            progress.finished(len(finished))
    if queue:
        progress.stopped(len(queue))
    return failures


def _run_in_chunks(rollouts, jobs, chunk, progress):
    """JOBS on the RQ queue, CHUNK at a time (the time checked between chunks). The failures' errors."""
    failures = []
    for i in range(0, len(jobs), chunk):
        if progress.out_of_time():
            progress.stopped(len(jobs) - i)
            break
        part = jobs[i : i + chunk]
        results = rollouts.run([task for task, _ in part], "heuristic", [folder for _, folder in part])
        failures += [r for r in results if isinstance(r, str)]
        progress.finished(len(part))
    return failures


# -- the command ------------------------------------------------------------------------------------------------
def add_arguments(parser):
    parser.add_argument("config", help="the run's YAML config: its episode and rollouts sections run the episodes")
    parser.add_argument(
        "--tasks",
        required=True,
        help="a synthesized dataset (python -m training synthesize) or any JSONL of {name, code} problems",
    )
    parser.add_argument("--out", required=True, help="the data folder (continued when it exists)")
    parser.add_argument("--held-out", type=float, default=0.15, help="the share of solved tasks held out")
    parser.add_argument(
        "--threshold",
        type=float,
        help="keep trajectories with at least this reward (default: the config's rft.threshold)",
    )
    parser.add_argument("--limit", type=int, default=0, help="the first N rows only")
    parser.add_argument("--stop-after", type=float, help="start no episodes after S seconds (run again to go on)")
    parser.add_argument(
        "--finish",
        action="store_true",
        help="run no more episodes: complete the data with the tasks whose episode is done, leaving the others out",
    )
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
            args.threshold,
            args.stop_after,
            finish=args.finish,
        )
    except (ConfigError, TaskError, DataError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=1))
    return 0
