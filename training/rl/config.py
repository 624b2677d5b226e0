"""A training run's configuration: one YAML file per run, read into dataclasses, recorded beside the outputs."""

import dataclasses
import typing
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agent.loop import EpisodeConfig


class ConfigError(ValueError):
    """The run configuration is invalid; the message names the key and what is allowed."""


class StaleServerError(ConfigError):
    """Rollouts would reach a policy server that keeps its first weights; the message says how to make it reload."""


@dataclass
class ModelConfig:
    path: str | None = None  # a local transformers checkpoint; None: a small model built from the fields below
    arch: str = "llama"  # llama, qwen2 or mistral (transformers' model types)
    hidden_size: int = 64
    layers: int = 2
    heads: int = 4
    intermediate_size: int = 128
    vocab_size: int = 2048  # of the tokenizer trained on the task corpus
    max_positions: int = 16384
    dtype: str = "float32"  # float32 or bfloat16 (the learner's weights)
    mixed_precision: str = "no"  # no or bf16: float32 weights and optimizer, bf16 autocast (accelerate's)


@dataclass
class TasksConfig:
    # a JSONL of {"name", "code"} rows (KernelBench's problems.jsonl), a synthesized dataset, or a folder of .py files
    source: str = ""
    levels: list = field(default_factory=list)  # keep only these KernelBench levels (empty: all)
    names: list = field(default_factory=list)  # keep only these problem names (empty: all)
    limit: int = 0  # at most this many tasks (0: all)
    held_out: float = 0.2  # fraction kept for evaluation, never trained on (a data build's rows carry their own)
    unreached: bool = False  # a data build's tasks the teacher did not solve: train on them too
    min_held_out: int = 1


@dataclass
class RunEpisodeConfig(EpisodeConfig):
    """The run's `episode` section: agent.loop's EpisodeConfig (the one episode record: device, turns, context,
    the sandbox's settings as `eval`), plus the temperature the actor samples its answers at."""

    temperature: float = 1.0

    def episode(self, **changes):
        """The agent's EpisodeConfig of this section, with CHANGES: what episodes and rollout jobs take."""
        data = {**self.to_json(), **changes}
        data.pop("temperature")
        return EpisodeConfig.from_json(data)


# A run's episodes by default: the toy model's small budgets on the CPU target (the record's own defaults suit a
# served LLM on a GPU).
RUN_EPISODE = {"device": "cpu", "max_turns": 4, "context_tokens": 16384, "response_tokens": 256, "bash_timeout_s": 60.0}


@dataclass
class RolloutsConfig:
    backend: str = "inprocess"  # inprocess (episodes in this process) or rq (jobs on an RQ queue)
    workers: int = 1  # inprocess: episodes run at once (threads: their tool calls overlap, answers are batched)
    max_batch: int = 32  # inprocess: answers generated together at most (1: one sequence at a time)
    max_batch_tokens: int = 262144  # inprocess: a batch's rows x (prompt + answer) tokens at most
    batch_wait_s: float = 0.2  # inprocess: how long a batch waits for episodes still in a tool call
    decode: str = "dynamic"  # inprocess: dynamic (a KV cache that grows) or static (preallocated; on CUDA the decode
    #                          step is compiled into a CUDA graph: training/rl/generation.py)
    attention: str = "sdpa"  # inprocess: the actor's attention while it decodes: sdpa (the model's) or matmul (SDPA
    #                          for prompts, matrix products per new token: training/rl/decode_attention.py)
    loop_window: int = 512  # inprocess: a row whose last this-many tokens repeat one block of at most 64 is finished
    #                         (greedy decoding's loops would run to response_tokens; 0: never)
    queue: str = "staff-gpu"  # rq: the queue GPU workers take staff jobs from (studio/queues.py)
    redis_url: str = ""  # rq: default REDIS_URL or redis://127.0.0.1:6379/0
    policy: str = "transformers"  # rq: how workers reach the policy: transformers (load the pushed checkpoint)
    #                              or openai (an endpoint serving it: agent.serve started here, or vLLM)
    base_url: str = ""  # rq + openai: an endpoint already serving the policy (vLLM); empty: start agent.serve
    reload: str = "none"  # how base_url's server takes each pushed actor: none (refused for actor episodes) or
    #                       vllm (its sleep / reload_weights endpoints: training/rl/reload.py)
    job_timeout_s: int = 3600
    format_penalty: float = 0.0  # reward added per turn whose tool calls could not be parsed (<= 0)
    turn_penalty: float = 0.0  # reward added per turn (<= 0): makes long, redundant searches cost


@dataclass
class SingleTurnConfig:
    steps: int = 2
    prompts_per_step: int = 4
    max_new_tokens: int = 256
    lr: float = 1e-4


@dataclass
class FineTuneConfig:
    """The supervised fine-tuning knobs the distill and rft stages share (training/rl/rft.py: fine_tune)."""

    epochs: int = 2
    lr: float = 1e-3
    batch_size: int = 2
    max_tokens: int = 16384  # longer sequences are cut (their tail)
    pack: bool = False  # samples packed into rows of max_tokens (positions restart per sample), batch_size rows a step
    schedule: str = "constant"  # constant or cosine (decaying to min_lr_ratio x lr at the last step)
    warmup: float = 0.0  # the share of the optimizer steps the learning rate ramps up over
    min_lr_ratio: float = 0.1


@dataclass
class DistillConfig(FineTuneConfig):
    # The teacher's first turns (analysis, then its write of the kernel, binding and ModelNew), unverified partial
    # episodes built on the CPU by `python -m training distill-data` (training/rl/distill.py): its trajectories.jsonl.
    data: str = ""


@dataclass
class RFTConfig(FineTuneConfig):
    source: str = "heuristic"  # whose trajectories: heuristic (the built-in optimizer) or policy (the actor's)
    episodes: int = 4
    # Keep trajectories whose reward is at least this. Under the paper's reward (sandbox/reward.py: -1 failed,
    # 1 correct, 2 more than 5% faster than eager, 3 than both) 1 keeps every correct solution, 2 the faster ones.
    threshold: float = 1.0
    data: str = ""  # a data build's trajectories.jsonl (python -m training data): trained on instead of episodes
    heuristic_max_turns: int = 12  # the heuristic's episodes' turn budget, when more than episode.max_turns
    # The teacher's episodes restated in the actor's budget before training (training/rl/restate.py): the task's
    # turns and time and the turns-left notes as the actor's episodes show them, not the teacher's longer budget.
    restate_budget: bool = True
    heuristic_tune: bool = True  # the heuristic measures other block sizes on CUDA (False: one verification, a
    #                              shorter episode the actor can copy within fewer turns, at a third of the GPU time)
    # The teacher's episodes at once while `python -m training data` builds the data (inprocess backend), kept in
    # flight as each one finishes. 0: three quarters of the host's cores. Each holds a jailed analysis, a build and
    # two sandbox workers, and all of them take turns on the device's timing lock. On the H200's 16 cores 12 at once
    # ran 16.6 episodes a minute and 8 ran 13.8 (bench/results/rl-pipeline-h200-2026-11-28d).
    teacher_workers: int = 0


@dataclass
class ValueConfig:
    episodes: int = 4  # fresh episodes of the current actor (plus the RFT trajectories, when there are)
    max_epochs: int = 20
    lr: float = 1e-3
    batch_size: int = 4
    lam: float = 1.0  # 1.0: Monte-Carlo targets; below 1: GAE targets from the critic's own values
    min_explained_variance: float = 0.0  # done once it stays above this ...
    patience: int = 2  # ... for this many epochs in a row


@dataclass
class GuardsConfig:
    entropy_surge: float = 2.0  # entropy above this multiple of its first value
    ratio_max: float = 10.0  # an importance ratio above this (or below its inverse)
    action: str = "stop"  # stop (checkpoint, then exit with an error) or warn


@dataclass
class PPOConfig:
    steps: int = 2
    episodes_per_step: int = 4
    gamma: float = 1.0
    lam: float = 0.95
    clip: float = 0.2
    clip_high: float | None = None  # the ratio's upper clip, 1 + clip_high (the CUDA Agent recipe: 0.28); None: clip
    value_clip: float = 0.2
    kl_coef: float = 0.0  # KL to the reference (the actor as the stage began), in the loss; 0 loads no reference
    entropy_coef: float = 0.0
    value_coef: float = 1.0
    max_grad_norm: float = 1.0
    lr: float = 1e-5
    critic_lr: float = 1e-4
    epochs: int = 1  # passes over each batch
    minibatch_size: int = 4
    whiten_advantages: bool = True
    eval_every: int = 0  # held-out evaluation every this many steps (0: after the stage only)
    guards: GuardsConfig = field(default_factory=GuardsConfig)


@dataclass
class RunConfig:
    run_dir: str = "runs/run"
    seed: int = 0
    stages: list = field(default_factory=lambda: ["single_turn", "rft", "value", "ppo"])
    checkpoint_every: int = 1  # steps (epochs, for RFT and value pre-training)
    eval_episodes: int = 0  # held-out episodes after the stages of eval_after (0: no evaluation)
    eval_after: list = field(default_factory=lambda: ["rft", "ppo"])  # and every ppo.eval_every PPO steps
    # the actor's sampling temperature in held-out evaluations (0: greedy); None: episode.temperature, as rollouts
    eval_temperature: float | None = None
    model: ModelConfig = field(default_factory=ModelConfig)
    critic: ModelConfig | None = None  # default: a copy of the actor's base (a separate model)
    tasks: TasksConfig = field(default_factory=TasksConfig)
    episode: RunEpisodeConfig = field(default_factory=lambda: RunEpisodeConfig(**RUN_EPISODE))
    rollouts: RolloutsConfig = field(default_factory=RolloutsConfig)
    single_turn: SingleTurnConfig = field(default_factory=SingleTurnConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)
    rft: RFTConfig = field(default_factory=RFTConfig)
    value: ValueConfig = field(default_factory=ValueConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)

    def to_json(self):
        return {**asdict(self), "episode": self.episode.to_json()}

    @classmethod
    def from_json(cls, data):
        config = _build(cls, data or {}, "")
        config.validate()
        return config

    def validate(self):
        checks = [
            (self.episode.device in ("cpu", "cuda"), "episode.device must be cpu or cuda"),
            (self.rollouts.backend in ("inprocess", "rq"), "rollouts.backend must be inprocess or rq"),
            (self.rollouts.policy in ("transformers", "openai"), "rollouts.policy must be transformers or openai"),
            (self.rollouts.reload in ("none", "vllm"), "rollouts.reload must be none or vllm"),
            (self.model.mixed_precision in ("no", "bf16"), "model.mixed_precision must be no or bf16"),
            (self.rft.source in ("heuristic", "policy"), "rft.source must be heuristic or policy"),
            (self.ppo.guards.action in ("stop", "warn"), "ppo.guards.action must be stop or warn"),
            (set(self.stages) <= set(STAGES), f"stages must be among {', '.join(STAGES)}"),
            (set(self.eval_after) <= set(STAGES), f"eval_after must be among {', '.join(STAGES)}"),
            (0 <= self.tasks.held_out < 1, "tasks.held_out must be in [0, 1)"),
            (0 < self.ppo.gamma <= 1 and 0 <= self.ppo.lam <= 1, "ppo.gamma must be in (0, 1], ppo.lam in [0, 1]"),
            (self.rollouts.workers >= 1, "rollouts.workers must be at least 1"),
            (self.rft.teacher_workers >= 0, "rft.teacher_workers must be at least 0 (0: three quarters of the cores)"),
            (self.rollouts.max_batch >= 1, "rollouts.max_batch must be at least 1 (1: one sequence at a time)"),
            (self.rollouts.loop_window >= 0, "rollouts.loop_window must be at least 0 (0: never stop a loop)"),
            (self.rollouts.decode in ("dynamic", "static"), "rollouts.decode must be dynamic or static"),
            (self.rollouts.attention in ("sdpa", "matmul"), "rollouts.attention must be sdpa or matmul"),
            (self.rollouts.format_penalty <= 0 and self.rollouts.turn_penalty <= 0, "penalties must be <= 0"),
        ]
        for name, section in (("distill", self.distill), ("rft", self.rft)):
            checks.append((section.schedule in ("constant", "cosine"), f"{name}.schedule must be constant or cosine"))
            checks.append((0 <= section.warmup < 1, f"{name}.warmup must be in [0, 1): a share of the optimizer steps"))
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
        if "distill" in self.stages and not self.distill.data:
            raise ConfigError(
                "the distill stage needs distill.data: the trajectories.jsonl of `python -m training distill-data` "
                "(--set distill.data=PATH), or leave distill out of stages"
            )
        if not self.tasks.source:
            raise ConfigError("tasks.source is required: a JSONL of problems (name, code) or a folder of .py files")
        if self.actor_episodes():
            refuse_stale(self.rollouts, f"the stages {', '.join(self.stages)}")

    def actor_episodes(self):
        """Whether the stages run episodes of a changing actor on the rollout workers (not the heuristic's only)."""
        return (
            self.rollouts.backend == "rq"
            and self.rollouts.policy == "openai"
            and (
                "ppo" in self.stages
                or ("value" in self.stages and self.value.episodes > 0)
                or ("rft" in self.stages and self.rft.source == "policy")
                or self.eval_episodes > 0
            )
        )


def refuse_stale(rollouts, who="PPO"):
    """StaleServerError when ROLLOUTS points the actor's episodes at a server that never reloads its weights."""
    if rollouts.base_url and rollouts.reload != "vllm":
        raise StaleServerError(
            f"rollouts.base_url {rollouts.base_url} serves fixed weights: {who} would roll out the first checkpoint "
            f"forever. Set rollouts.reload: vllm and start the server on RUN/policy with VLLM_SERVER_DEV_MODE=1 and "
            f"--enable-sleep-mode (it then reloads after each step), or leave rollouts.base_url empty (agent.serve "
            f"is then restarted on each push)"
        )


STAGES = ("distill", "single_turn", "rft", "value", "ppo")


def _build(cls, data, where):
    if not isinstance(data, dict):
        raise ConfigError(f"{where or 'the config'} must be a mapping, not {type(data).__name__}")
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(where + k for k in unknown)}: allowed are {', '.join(where + k for k in known)}"
        )
    hints = typing.get_type_hints(cls)
    values = {}
    for name, value in data.items():
        kind = hints[name]
        nested = next((t for t in typing.get_args(kind) or (kind,) if dataclasses.is_dataclass(t)), None)
        if nested is not None and value is not None:
            values[name] = _build(nested, _section(known[name], nested, value, data, cls), f"{where}{name}.")
        else:
            values[name] = _check(value, kind, where + name)
    try:
        return cls(**values)
    except ConfigError:
        raise
    except ValueError as exc:  # the record's own checks (an EvalConfig's ranges, an episode's one device)
        raise ConfigError(f"{where.rstrip('.') or 'the config'}: {exc}") from None


def _section(spec, kind, value, parent, parent_cls):
    """A nested section's VALUE completed from what it inherits: the keys it leaves out from the field's default
    record (the run's episode defaults are not the agent's), and the device from the section that holds it (the
    sandbox's settings run on the episode's device)."""
    if not isinstance(value, dict):
        return value
    if spec.default_factory is not dataclasses.MISSING:
        default = spec.default_factory()
        value = {**(default.to_json() if hasattr(default, "to_json") else asdict(default)), **value}
    names = {f.name for f in dataclasses.fields(kind)}
    if "device" in names and "device" not in value and "device" in {f.name for f in dataclasses.fields(parent_cls)}:
        value = {**value, "device": parent.get("device", getattr(parent_cls, "device"))}
    return value


def _check(value, kind, key):
    """VALUE if it fits KIND (ints pass for floats, YAML's 1e-3 strings for floats), else a ConfigError."""
    options = typing.get_args(kind) if typing.get_origin(kind) in (typing.Union, type(int | None)) else (kind,)
    if value is None and type(None) in options:
        return None
    for option in options:
        base = typing.get_origin(option) or option
        if base is float and isinstance(value, (int, float, str)) and not isinstance(value, bool):
            try:
                return float(value)
            except ValueError:
                continue
        if base is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if base in (str, bool, list, dict) and isinstance(value, base):
            return value
    raise ConfigError(f"{key} must be {getattr(kind, '__name__', kind)}, not {value!r}")


def load(path):
    """The RunConfig of the YAML file PATH."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path} does not exist: give the path of a run's YAML config (training/configs/*.yaml)")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    return RunConfig.from_json(data)


def override(config, assignments):
    """CONFIG with KEY=VALUE assignments applied (dotted keys, YAML values), validated again."""
    import yaml

    data = config.to_json()
    for item in assignments or []:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"--set {item!r}: write KEY=VALUE, e.g. --set ppo.steps=10")
        node, parts = data, key.split(".")
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                raise ConfigError(f"--set {item!r}: {part} is not a section of the config")
            node = node[part]
        node[parts[-1]] = yaml.safe_load(raw)
    return RunConfig.from_json(data)


def dump(config, path):
    """Record CONFIG as YAML at PATH (the run folder keeps the configuration it ran with)."""
    import yaml

    Path(path).write_text(yaml.safe_dump(config.to_json(), sort_keys=False))
