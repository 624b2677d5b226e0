"""Rollouts: episodes of the agent loop (agent.loop.Episode) on the run's tasks, rewarded by the sandbox.

Two back-ends. `inprocess`: episodes run in this process, several at once in threads (tool calls and sandbox
evaluations overlap, generation on the live actor is serialized by a lock). `rq`: each episode is a job on the
RQ queue GPU workers take staff jobs from (`staff-gpu`), so rollouts scale with the workers on any number of hosts;
the trainer pushes the actor after each update to RUN/policy/ (a transformers folder workers load, over a filesystem the
hosts share) or serves it over the OpenAI-compatible API (`python -m agent.serve`, restarted after each push;
or point `rollouts.base_url` at a vLLM server that reloads RUN/policy/). Each trajectory keeps the token data
training needs (agent.trajectory.Turn: prompt and response ids, response log-probs).
"""
import logging
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agent.loop import Episode, EpisodeConfig, save
from agent.policies import PolicyError, make_policy
from agent.policies.base import template_messages
from agent.policies.transformers_policy import TransformersPolicy
from agent.trajectory import Trajectory
from sandbox import EvalConfig, SandboxError

log = logging.getLogger(__name__)


class RolloutError(RuntimeError):
    """No episode of a step could be run; the message says why (the first failure) and what to check."""


class LivePolicy(TransformersPolicy):
    """The transformers policy over a model object held by the trainer (its weights change between steps).

    Its prompts continue the exact tokens it generated: when a turn's messages extend the previous turn's
    messages and answer, the prompt is the previous prompt and response ids plus the new environment text
    (tokenized apart), instead of a re-tokenized rendering in which the model's own answer may come out as other
    tokens. An episode is then one training sequence (until its context is condensed).
    """

    def __init__(self, lm, tokenizer, device, lock, temperature=1.0, max_new_tokens=256, max_context=None):
        self.model, self.lm, self.tokenizer, self.device = "actor", lm, tokenizer, device
        self.lock = lock
        self.temperature, self.max_new_tokens = temperature, max_new_tokens
        self.max_context = max_context or getattr(lm.config, "max_position_embeddings", None)
        self.last = None  # (messages, Generation) of the previous turn

    def reset(self, task):
        super().reset(task)
        self.last = None

    def generate(self, messages, tools, max_new_tokens=None, temperature=None):
        prompt_ids = self._continued(messages, tools)
        with self.lock:
            training = self.lm.training
            self.lm.eval()
            try:
                g = super().generate(messages, tools, max_new_tokens, temperature, prompt_ids=prompt_ids)
            finally:
                self.lm.train(training)
        self.last = (list(messages), g)
        return g

    def _continued(self, messages, tools):
        """The prompt ids continuing the previous turn token for token, or None (render the prompt afresh)."""
        if self.last is None:
            return None
        previous, g = self.last
        n = len(previous)
        if len(messages) <= n + 1 or messages[:n] != previous or messages[n].get("role") != "assistant":
            return None
        render = self.tokenizer.apply_chat_template
        answered = render(template_messages(messages[:n + 1]), tools=tools or None, tokenize=False)
        prompt = render(template_messages(messages), tools=tools or None, add_generation_prompt=True, tokenize=False)
        eos = self.tokenizer.eos_token
        cut = answered.rfind(eos)
        if cut < 0 or not prompt.startswith(answered[:cut]):
            return None
        # the answer's end-of-turn token is the model's when it generated one, the environment's when it was cut off
        tail = prompt[cut + len(eos):] if g.finish_reason == "stop" else prompt[cut:]
        return g.prompt_token_ids + g.response_token_ids + self.tokenizer(tail, add_special_tokens=False)["input_ids"]


def episode_config(config, who="actor"):
    """agent.loop's EpisodeConfig from the run's `episode` section, for WHO acts: the heuristic's episodes (the
    RFT data) get rft.heuristic_max_turns when that is more, since it needs about six turns to submit."""
    e = config.episode
    max_turns = max(e.max_turns, config.rft.heuristic_max_turns) if who == "heuristic" else e.max_turns
    return EpisodeConfig(device=e.device, max_turns=max_turns, context_tokens=e.context_tokens,
                         response_tokens=e.response_tokens, bash_timeout_s=e.bash_timeout_s,
                         eval=EvalConfig(device=e.device, **e.eval))


def run_episode(problem, out, policy, options, episode):
    """One episode as a plain function (the RQ job): PROBLEM's file, OUT its folder, POLICY and OPTIONS as
    make_policy takes them, EPISODE an agent.loop.EpisodeConfig as JSON. Returns the trajectory as JSON."""
    eval_config = EvalConfig(**episode.pop("eval"))
    config = EpisodeConfig(**episode, eval=eval_config)
    agent = make_policy(policy, **options)
    try:
        trajectory = Episode(problem, agent, Path(out) / "workspace", config).run()
    finally:
        agent.close()
    save(trajectory, out)
    return trajectory.to_json()


class Rollouts:
    """Runs a step's episodes on the configured back-end; `sync(actor)` makes the next episodes use its weights."""

    def __init__(self, config, run_dir, tokenizer, device="cpu"):
        self.config, self.run_dir, self.tokenizer, self.device = config, Path(run_dir), tokenizer, device
        self.actor = None
        self.lock = threading.Lock()
        self.server = None
        self.failures = 0

    # -- the policy ---------------------------------------------------------------------------------------------
    def sync(self, actor, accelerator=None):
        """Episodes after this call act with ACTOR (an unwrapped causal LM): in this process directly, on RQ
        workers through the pushed folder RUN/policy/ (and a restarted server, for the openai policy). An actor
        loaded from a checkpoint (on the CPU) is moved to the ACCELERATOR's device first: generating on the CPU
        beside a GPU was value pre-training's episodes on the H100."""
        if accelerator is not None:
            actor = actor.to(accelerator.device)
        self.actor = actor
        if self.config.rollouts.backend != "rq":
            return
        folder = self.run_dir / "policy"
        if accelerator is None or accelerator.is_main_process:
            tmp = folder.with_name("policy.tmp")
            actor.save_pretrained(tmp)
            self.tokenizer.save_pretrained(tmp)
            if folder.exists():
                import shutil
                shutil.rmtree(folder)
            tmp.rename(folder)
        if self.config.rollouts.policy == "openai" and not self.config.rollouts.base_url:
            self.stop_server()
            self.server = PolicyServer(folder)

    def stop_server(self):
        if self.server is not None:
            self.server.stop()
            self.server = None

    def _policy(self, who):
        """(name, options) for make_policy on a worker, or a Policy object for this process."""
        e = self.config.episode
        if who == "heuristic":
            return "heuristic", {}
        if self.config.rollouts.backend == "inprocess":
            return LivePolicy(self.actor, self.tokenizer, self.device, self.lock, temperature=e.temperature,
                              max_new_tokens=e.response_tokens, max_context=e.context_tokens)
        if self.config.rollouts.policy == "openai":
            url = self.config.rollouts.base_url or self.server.url
            return "openai", {"base_url": url, "token_ids": True, "temperature": e.temperature,
                              "max_tokens": e.response_tokens, "model": ""}
        return "transformers", {"model": str(self.run_dir / "policy"), "temperature": e.temperature,
                                "max_new_tokens": e.response_tokens, "max_context": e.context_tokens}

    # -- episodes -----------------------------------------------------------------------------------------------
    def collect(self, tasks, who, folder):
        """Trajectories of one episode per task in TASKS acted by WHO ('actor' or 'heuristic'), their files under
        FOLDER/I-NAME/. Episodes that fail to run are logged and counted in `failures`; none at all is an error."""
        folder = Path(folder)
        outs = [folder / f"{i:03d}-{task.name}" for i, task in enumerate(tasks)]
        if self.config.rollouts.backend == "rq":
            results = self._collect_rq(tasks, who, outs)
        else:
            with ThreadPoolExecutor(self.config.rollouts.workers) as pool:
                results = list(pool.map(lambda pair: self._episode(pair[0], who, pair[1]), zip(tasks, outs)))
        trajectories = [t for t in results if isinstance(t, Trajectory)]
        errors = [r for r in results if isinstance(r, str)]
        self.failures = len(errors)
        if not trajectories:
            raise RolloutError(f"no episode could be run ({len(errors)} failed); the first error: "
                               f"{errors[0] if errors else 'no task given'}")
        return trajectories

    def _episode(self, task, who, out):
        policy = self._policy(who)
        if isinstance(policy, tuple):
            policy = make_policy(policy[0], **policy[1])
        try:
            trajectory = Episode(task.path, policy, out / "workspace", episode_config(self.config, who)).run()
        except (PolicyError, SandboxError, OSError, ValueError) as exc:
            log.warning("episode of %s (%s) failed: %s", task.name, who, exc)
            return f"{task.name}: {exc}"
        save(trajectory, out)
        return trajectory

    def _collect_rq(self, tasks, who, outs):
        jobs = self.enqueue(tasks, who, outs)
        return self.gather(jobs)

    def enqueue(self, tasks, who, outs):
        """RQ jobs running one episode each, on the configured queue."""
        queue = self._queue()
        name, options = self._policy(who)
        episode = episode_config(self.config, who).to_json()
        return [queue.enqueue(run_episode, kwargs={"problem": task.path, "out": str(out), "policy": name,
                                                   "options": options, "episode": dict(episode)},
                              job_timeout=self.config.rollouts.job_timeout_s, result_ttl=24 * 3600,
                              description=f"rollout {task.name} ({who})")
                for task, out in zip(tasks, outs)]

    def gather(self, jobs, poll_s=0.5):
        """Each job's Trajectory, or an error string for a job that failed or was stopped."""
        deadline = time.monotonic() + self.config.rollouts.job_timeout_s + 60
        results = [None] * len(jobs)
        while any(r is None for r in results):
            for i, job in enumerate(jobs):
                if results[i] is not None:
                    continue
                status = job.get_status(refresh=True)
                if status == "finished":
                    results[i] = Trajectory.from_json(job.return_value())
                elif status in ("failed", "stopped", "canceled"):
                    info = (job.latest_result().exc_string or "").strip().splitlines() if job.latest_result() else []
                    results[i] = f"job {job.id} {status}: {info[-1] if info else ''}"
                    log.warning("rollout %s", results[i])
            if time.monotonic() > deadline:
                raise RolloutError(f"rollout jobs did not finish in {self.config.rollouts.job_timeout_s} s: are "
                                   f"workers listening on the {self.config.rollouts.queue!r} queue?")
            if any(r is None for r in results):
                time.sleep(poll_s)
        return results

    def _queue(self):
        import os

        from redis import Redis
        from rq import Queue
        url = self.config.rollouts.redis_url or os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
        return Queue(self.config.rollouts.queue, connection=Redis.from_url(url))


class PolicyServer:
    """`python -m agent.serve` over a checkpoint folder, on a free loopback port, for workers using the openai
    policy. vLLM serves large models in production: point rollouts.base_url at it instead."""

    def __init__(self, folder, host="127.0.0.1", timeout_s=300):
        self.proc = subprocess.Popen([sys.executable, "-m", "agent.serve", "--model", str(folder), "--name", "actor",
                                      "--host", host, "--port", "0"], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        deadline, lines = time.monotonic() + timeout_s, []
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("serving "):
                self.url = line.split(" on ")[-1].strip()
                return
        self.stop()
        raise RolloutError("agent.serve did not start:\n" + "".join(lines[-20:]))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
