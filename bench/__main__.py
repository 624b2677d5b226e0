"""`python -m bench [NAME ...]`: run the named benchmarks (all of them by default; GPU ones skip without CUDA)."""

import argparse
import importlib
import pkgutil
import sys

import bench


def benchmarks():
    """The names of bench's modules that are benchmarks (not helpers `_x`, nor tools that set BENCHMARK = False)."""
    names = [m.name for m in pkgutil.iter_modules(bench.__path__) if not m.name.startswith("_")]
    return [n for n in names if getattr(importlib.import_module(f"bench.{n}"), "BENCHMARK", True)]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split(": ", 1)[1])
    parser.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run (bench/NAME.py); default: all")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = parser.parse_args(argv)
    known = benchmarks()
    if args.list:
        print("\n".join(known))
        return 0
    unknown = [n for n in args.names if n not in known]
    if unknown:
        parser.error(f"no benchmark named {', '.join(unknown)}; `python -m bench --list` lists them")
    for name in args.names or known:
        print(f"== bench.{name}", flush=True)
        importlib.import_module(f"bench.{name}").main([])
    return 0


if __name__ == "__main__":
    sys.exit(main())
