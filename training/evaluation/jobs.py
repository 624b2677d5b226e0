"""The evaluation's one job: run an episode of a policy on a problem and return its result record and trajectory.

The same function runs in a local process pool and as an RQ job (`rq worker staff-gpu`), so both paths measure alike.
It touches no CUDA itself (an RQ worker's parent must not initialize it); the sandbox does, in its own processes.
"""

import logging
import os
import socket
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from agent.loop import Episode, EpisodeConfig
from agent.policies import PolicyError, PolicyUnavailable, make_policy
from sandbox import EvalConfig
from sandbox.errors import SandboxError
from sandbox.workers.reference import BASELINE_PROTOCOL

from training.evaluation.problems import BenchProblem
from training.evaluation.results import EpisodeResult

log = logging.getLogger(__name__)


@dataclass
class EpisodeRequest:
    """Everything a worker needs to run one episode; crosses processes and hosts as JSON."""

    arm: str
    problem: dict  # BenchProblem.to_json()
    policy: str
    policy_options: dict = field(default_factory=dict)
    episode: EpisodeConfig = field(default_factory=EpisodeConfig)  # the arm's sandbox settings as its eval
    attempt: int = 1
    # Re-timing (retime.py) instead of an episode: {"result": the stored EpisodeResult JSON, "solution": its file}
    retime: dict = field(default_factory=dict)

    @property
    def key(self):
        return BenchProblem.from_json(self.problem).key

    def to_json(self):
        return {**asdict(self), "episode": self.episode.to_json()}

    @classmethod
    def from_json(cls, data):
        return cls(**{**data, "episode": EpisodeConfig.from_json(data["episode"])})


def episodes_of(spec):
    """{arm: agent.loop.EpisodeConfig} of an evaluation's SPEC (run.json): its episode budget, each arm's sandbox
    settings."""
    return {
        arm: EpisodeConfig(
            device=spec["device"],
            max_turns=spec["max_turns"],
            wall_clock_s=spec["wall_clock_s"],
            context_tokens=spec["context_tokens"],
            response_tokens=spec["response_tokens"],
            eval=EvalConfig.from_json(settings),
        )
        for arm, settings in spec["arms"].items()
    }


class EvaluationAborted(Exception):
    """No episode can run (the policy's back-end is unreachable): stop, fix it, then run again with --resume."""


# One policy per worker process, built on its first episode: a model loads once, not once per problem.
_POLICIES = {}


def _policy(name, options):
    key = (name, tuple(sorted(options.items())))
    if key not in _POLICIES:
        _POLICIES[key] = make_policy(name, **options)
    return _POLICIES[key]


def run_episode(request):
    """Run REQUEST (EpisodeRequest JSON); returns {"result": EpisodeResult JSON, "trajectory": JSON or None}."""
    req = EpisodeRequest.from_json(request)
    problem = BenchProblem.from_json(req.problem)
    result = EpisodeResult(
        arm=req.arm,
        key=problem.key,
        level=problem.level,
        problem_id=problem.problem_id,
        name=problem.name,
        problem_sha256=problem.sha256,
        attempt=req.attempt,
        worker=f"{socket.gethostname()}:{os.getpid()}",
        policy=req.policy,
    )
    t0 = time.monotonic()
    trajectory = None
    with tempfile.TemporaryDirectory(prefix="ks-eval-") as tmp:
        path = problem.write(tmp)
        try:
            policy = _policy(req.policy, req.policy_options)
            result.model = policy.model
            trajectory = Episode(path, policy, os.path.join(tmp, "workspace"), req.episode).run()
        except PolicyUnavailable as exc:
            raise EvaluationAborted(f"the {req.policy} policy is unavailable: {exc}") from None
        except (PolicyError, SandboxError) as exc:
            # The episode could not start on this problem (an invalid problem, a prompt too long for the model):
            # a failed result, recorded with the reason.
            result.error = f"{type(exc).__name__}: {exc}"
    result.wall_s = round(time.monotonic() - t0, 3)
    result.finished_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    result.extra["timing_protocol"] = BASELINE_PROTOCOL  # `--retime` leaves results measured under it alone
    if trajectory is not None:
        result.verdict = trajectory.verdict
        result.stop_reason = trajectory.stop_reason
        result.turns = len(trajectory.turns)
    log.info("episode %s/%s: %s", req.arm, problem.key, result.error or trajectory.verdict["status"])
    return {"result": result.to_json(), "trajectory": trajectory.to_json() if trajectory else None}
