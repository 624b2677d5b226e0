"""`python -m training train CONFIG.yaml [--stage distill|single_turn|rft|value|ppo] [--set KEY=VALUE ...]`: run the
stages of a training run (all those the config lists, or one), each resumed from its last checkpoint.

    python -m training train training/configs/toy.yaml                  # the CPU toy run, every stage
    accelerate launch -m training train training/configs/gpu.yaml --stage ppo

Outputs under the config's run_dir: config.yaml (as run), tasks/ (with the train/held-out split), base/ (the
built model), checkpoints/STAGE/step-N/, episodes/, metrics.jsonl, tensorboard/, plots/ and train.log.
"""

import logging
import sys

from training.rl import config as run_config
from training.rl.config import STAGES, ConfigError

EXIT_COLLAPSE = 3
EXIT_UNFINISHED = 4  # --stop-after: the budget ran out, checkpoints kept; the same command goes on


def add_arguments(parser):
    parser.add_argument("config", help="the run's YAML config (see training/configs/)")
    parser.add_argument("--stage", choices=STAGES, help="run only this stage (default: the config's stages)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config value, e.g. --set ppo.steps=10 (repeatable)",
    )
    parser.add_argument("--run-dir", help="the run folder (default: the config's run_dir)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    parser.add_argument(
        "--stop-after",
        type=float,
        metavar="S",
        help="checkpoint and exit (code 4) after the first step that ends past S seconds",
    )


def run(args):
    from training.rl.distill import DistillError
    from training.rl.metrics import TrainingCollapsed
    from training.rl.models import ModelError
    from training.rl.reload import ReloadError
    from training.rl.rft import RFTError
    from training.rl.rollouts import RolloutError
    from training.rl.runtime import OutOfTime
    from training.rl.tasks import TaskError
    from training.rl.tokens import TokenizationError

    try:
        config = run_config.override(run_config.load(args.config), args.set)
        if args.run_dir:
            config.run_dir = args.run_dir
        return train(config, [args.stage] if args.stage else config.stages, args.quiet, args.stop_after)
    except TrainingCollapsed as exc:
        print(f"stopped: {exc}", file=sys.stderr)
        return EXIT_COLLAPSE
    except OutOfTime as exc:
        print(f"unfinished: {exc}", file=sys.stderr)
        return EXIT_UNFINISHED
    except (
        ConfigError,
        TaskError,
        ModelError,
        RolloutError,
        DistillError,
        RFTError,
        TokenizationError,
        ReloadError,
    ) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def train(config, stages, quiet=False, stop_after=None):
    from training.rl import distill, plots, ppo, rft, single_turn, value
    from training.rl.runtime import Run

    run = Run(config, quiet=quiet, stop_after=stop_after)
    _log_to(run.dir / "train.log")
    modules = {"distill": distill, "single_turn": single_turn, "rft": rft, "value": value, "ppo": ppo}
    for stage in [s for s in STAGES if s in stages]:
        evaluate = stage in config.eval_after and config.eval_episodes and run.accelerator.is_main_process
        if run.stage_done(stage):
            _say(quiet, f"{stage}: already done (checkpoints/{stage}); skipped")
            if not (evaluate and not run.evaluated(stage)):
                continue
            model = None  # stopped before its evaluation: evaluate the stage's actor now
        else:
            _say(quiet, f"{stage}: starting")
            model = modules[stage].train(run)
        if evaluate:
            # value pre-training trains the critic: the actor evaluated after it is the one it left unchanged
            actor = run.actor(stage).to(run.accelerator.device) if stage == "value" or model is None else model
            record = run.evaluate(stage, actor)
            _say(
                quiet,
                f"{stage}: held-out correct rate {record['correct_rate']:.3f}, "
                f"mean reward {record.get('reward_mean', float('nan')):.3f}, well-formed turns "
                f"{record.get('tool_call_rate', float('nan')):.2f} over {record['episodes']} episodes",
            )
    if run.accelerator.is_main_process:
        written = plots.plot(run.dir)
        _say(
            quiet,
            f"done: {run.dir} (metrics.jsonl, tensorboard/, checkpoints/"
            + (f", {len(written)} plots in plots/)" if written else ")"),
        )
    end_processes(run.accelerator)
    return 0


def end_processes(accelerator):
    """Every rank ends together and the process group is torn down before exit: a rank leaving with gloo's
    threads still running aborts at interpreter shutdown ('terminate called without an active exception')."""
    import torch.distributed as dist

    if accelerator.num_processes > 1 and dist.is_available() and dist.is_initialized():
        accelerator.wait_for_everyone()
        dist.destroy_process_group()


def _say(quiet, text):
    logging.getLogger("training.rl").info(text)
    if not quiet:
        print(text, flush=True)


def _log_to(path):
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("training")
    root.setLevel(logging.INFO)
    if not any(isinstance(h, logging.FileHandler) and h.baseFilename == str(path) for h in root.handlers):
        root.addHandler(handler)
