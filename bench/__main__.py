"""`python -m bench [NAME ...]`: run the named benchmarks (all CPU-capable ones by default)."""
import importlib
import pkgutil
import sys

import bench


def main(argv):
    names = argv or [m.name for m in pkgutil.iter_modules(bench.__path__) if not m.name.startswith("_")]
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        print(f"== bench.{name}")
        module.main([])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
