"""What the jail costs per process start: the same Python command run bare and jailed, side by side in one run.

    python -m bench.jail_start [--reps 20] [--device cpu|cuda]

Prints the median wall time of each, the jail's overhead (jailed - bare) and the isolation in force; the design
target is an overhead of at most 0.3 s per jailed start.
"""

import argparse
import statistics
import subprocess
import sys
import time

from sandbox.isolation import Jail, isolation_level

COMMAND = [sys.executable, "-c", "import os, sys; sys.exit(0 if os.getcwd() else 1)"]


def _bare():
    t0 = time.perf_counter()
    subprocess.run(COMMAND, check=True, stdin=subprocess.DEVNULL, capture_output=True)
    return time.perf_counter() - t0


def _jailed(device):
    with Jail("bench", device) as jail:
        t0 = time.perf_counter()
        exit = jail.run(COMMAND, timeout=60)
        seconds = time.perf_counter() - t0
    if exit.returncode != 0:
        raise SystemExit(f"the jailed command failed: {exit.describe()}\n{exit.output}")
    return seconds


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.jail_start", description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    args = parser.parse_args(argv)
    _jailed(args.device)  # warm: the allow-list, the seccomp program and the page cache
    bare, jailed = [], []
    for _ in range(args.reps):  # interleaved, so that drift in the machine's load hits both alike
        bare.append(_bare())
        jailed.append(_jailed(args.device))
    b, j = statistics.median(bare), statistics.median(jailed)
    print(f"isolation: {isolation_level()}")
    print(f"| start of `python -c ...` (median of {args.reps}) | seconds |")
    print("| --- | ---: |")
    print(f"| bare subprocess | {b:.3f} |")
    print(f"| jailed (Jail.run) | {j:.3f} |")
    print(f"| jail overhead per start | {j - b:.3f} (target <= 0.300) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
