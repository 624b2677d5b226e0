"""`python -m training COMMAND ...`: one front door; each command lives in its own module.

A command module exposes `add_arguments(parser)` and `run(args) -> int`; it is imported only when its
command is used, so a command whose optional dependencies are missing does not break the others.
"""

import argparse
import importlib
import sys

# command -> (module, one-line help)
COMMANDS = {
    "evaluate": ("training.evaluation.cli", "run a policy over KernelBench levels and report the field's metrics"),
    "synthesize": ("training.synthesis.cli", "build verified fused-operator training tasks"),
    "train": ("training.rl.cli", "RFT warm-up, value pre-training and multi-turn PPO from a YAML config"),
    "data": ("training.rl.data", "teacher episodes over synthesized tasks: RFT trajectories and a held-out split"),
    "distill-data": (
        "training.rl.distill",
        "the teacher's first turns over synthesized tasks, on the CPU: distill data",
    ),
}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="python -m training", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    command = next((a for a in argv if not a.startswith("-")), None)
    modules = {}
    for name, (module_name, help_text) in COMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text)
        if name == command:  # import only the command in use
            try:
                modules[name] = importlib.import_module(module_name)
            except ImportError as exc:
                parser.exit(
                    2,
                    f"python -m training {name}: unavailable ({exc}); install the project's extras with `make setup`\n",
                )
            modules[name].add_arguments(sub_parser)
    args = parser.parse_args(argv)
    return modules[args.command].run(args)
