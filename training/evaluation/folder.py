"""An evaluation's folder: what it evaluates (run.json), its results, episodes and jobs, one writer at a time.

DIR/run.json        policy, options, device, turns and the sandbox setting of each arm; checked on --resume
DIR/results.jsonl   one line per finished episode (results.py)
DIR/episodes/ARM/levelN/NAME/   solution.py, trajectory.json, verdict.json of each episode
DIR/jobs.json       (RQ) the job of each unfinished problem, so a resumed run collects what workers did meanwhile
DIR/metrics.json, DIR/metrics.md   the report
"""

import fcntl
import json
import os
import uuid
from datetime import datetime, timezone
from pathlib import Path

from agent.loop import save
from agent.trajectory import Trajectory
from sandbox.jsonl import repair_jsonl

from training.evaluation.results import EpisodeResult, ResultsFile

# What may differ between a run and its --resume (where the policy is served, or the problems file lives).
NOT_COMPARED = {"run_id", "created_at", "problems", "command"}
NOT_COMPARED_OPTIONS = {"base_url"}


class FolderError(Exception):
    """The output folder cannot take this evaluation; the message says which folder to use instead."""


def _write_atomic(path, text):
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _identity(spec):
    out = {k: v for k, v in spec.items() if k not in NOT_COMPARED}
    out["policy_options"] = {k: v for k, v in spec.get("policy_options", {}).items() if k not in NOT_COMPARED_OPTIONS}
    return out


def _differences(old, new, prefix=""):
    diffs = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            diffs += _differences(a, b, f"{prefix}{key}.")
        elif a != b:
            diffs.append(f"{prefix}{key}: {a!r} there, {b!r} now")
    return diffs


class EvalFolder:
    def __init__(self, path):
        self.path = Path(path)
        self.results = ResultsFile(self.path / "results.jsonl")
        self.spec = None
        self._lock = None

    # -- opening ----------------------------------------------------------------------------------------------
    def open(self, spec, resume):
        """Take the folder for SPEC: a fresh one, or (RESUME) one holding the same evaluation."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.lock()
        run_json = self.path / "run.json"
        if run_json.exists():
            if not resume:
                raise FolderError(
                    f"{self.path} already holds an evaluation: add --resume to continue it, or choose a fresh --out"
                )
            old = self.read_spec()
            diffs = _differences(_identity(old), _identity(spec))
            if diffs:
                raise FolderError(
                    f"{self.path} holds a different evaluation ({'; '.join(diffs)}): resume it "
                    f"with the same options, or choose a fresh --out"
                )
            self.spec = {**old, "problems": spec.get("problems"), "command": spec.get("command")}
        else:
            if any(p.name != ".lock" for p in self.path.iterdir()) and not resume:
                raise FolderError(f"{self.path} is not empty and holds no evaluation: choose a fresh --out")
            self.spec = {
                "run_id": uuid.uuid4().hex[:12],
                "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                **spec,
            }
        _write_atomic(run_json, json.dumps(self.spec, indent=2, sort_keys=True))
        return self

    def read_spec(self):
        try:
            return json.loads((self.path / "run.json").read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise FolderError(
                f"{self.path / 'run.json'} is unreadable ({exc}): is {self.path} an evaluation folder?"
            ) from None

    def lock(self):
        """One evaluation process writes a folder at a time (a second would append the same problems twice)."""
        self._lock = open(self.path / ".lock", "a+")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.seek(0)
            holder = self._lock.read().strip() or "another process"
            self._lock.close()
            raise FolderError(f"{self.path} is being written by {holder}: wait for it, or stop it and --resume")
        self._lock.seek(0)
        self._lock.truncate()
        self._lock.write(f"pid {os.getpid()}\n")
        self._lock.flush()
        repair_jsonl(self.results.path)  # the writer now: a line a crash cut must not glue to the next append

    def close(self):
        if self._lock:
            self._lock.close()
            self._lock = None

    # -- results ----------------------------------------------------------------------------------------------
    def finished(self):
        """{(arm, key): EpisodeResult} of the episodes that ran to a verdict; errors run again on --resume."""
        return {k: r for k, r in self.results.read().items() if r.verdict is not None}

    def record(self, payload):
        """Store a job's payload: the episode's files first, then its result line (which makes it count)."""
        result = EpisodeResult.from_json(payload["result"])
        if payload.get("trajectory"):
            folder = self.path / "episodes" / result.arm / result.key
            save(Trajectory.from_json(payload["trajectory"]), folder)
            result.trajectory = str((folder / "trajectory.json").relative_to(self.path))
        self.results.append(result)
        return result

    # -- jobs (RQ) --------------------------------------------------------------------------------------------
    def jobs(self):
        path = self.path / "jobs.json"
        try:
            return json.loads(path.read_text()) if path.exists() else {}
        except json.JSONDecodeError:
            return {}  # only ever written whole; unreadable means nothing to collect

    def save_jobs(self, jobs):
        _write_atomic(self.path / "jobs.json", json.dumps(jobs, indent=1, sort_keys=True))
