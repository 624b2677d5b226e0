"""The chain planner's generated sources, written to a folder to diff before and after a change to its code generators.

Every problem of KernelBench's levels 1 and 2 (../shared/kernelbench/problems.jsonl), every small user-style module
of the heuristic's tests and a few of this script's own (EXTRA) is analysed on meta tensors (once: the analyses are
cached, pickled, in --cache, so a second run plans and writes from the same graphs even if the analysis changes
meanwhile), planned with make_plan, and its workspace written with workspace_files for "cuda" and "cpu". A chain
plan's files, its plan as JSON and the reason it keeps the problem's batch size (if it does) go under
OUT/chain/<case>/; a DAG plan only names its kind in OUT/other.txt, with the planner's reasons for the problems it
refuses (the DAG planner changes on its own); the C text that other modules import from the chain's code generator
(the CUDA prelude, the block reduction, the cuDNN preload) goes under OUT/shared/.

    .venv/bin/python tests/agent/golden_sources.py OUT [--levels 1,2] [--cache /tmp/ks-golden-cache]
    diff -r BEFORE AFTER   # empty when the generated sources did not change
"""

import argparse
import contextlib
import hashlib
import importlib.util
import io
import json
import pickle
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = ROOT.parent / "shared" / "kernelbench" / "problems.jsonl"
# The heuristic's tests whose module-level problem sources (strings holding a Model and get_inputs) join the corpus.
TEST_MODULES = ("test_heuristic_policy", "test_heuristic_cpu_library_kernels", "test_heuristic_shapes")


# Branches of the families that neither KernelBench's levels 1-2 nor the tests' problems reach.
MODULE = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        {init}

    def forward(self, x):
        return {forward}

def get_inputs():
    return [torch.randn({shape})]

def get_init_inputs():
    return []
"""
EXTRA = {
    "batch_norm_batch_statistics": (
        "self.bn = nn.BatchNorm2d(8, track_running_stats=False)",
        "self.bn(x) * 2.0",
        "4, 8, 6, 6",
    ),
    "log_softmax_rows": ("pass", "torch.log_softmax(x, dim=1) * 2.0", "16, 64"),
    "strided_normalization": ("pass", "x / x.abs().sum(dim=1, keepdim=True)", "4, 8, 16"),
    "avg_pool_without_padding": (
        "self.pool = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)",
        "torch.sigmoid(self.pool(x))",
        "2, 4, 9, 9",
    ),
    "layer_norm_without_bias": ("self.norm = nn.LayerNorm(32, bias=False)", "torch.relu(self.norm(x))", "8, 32"),
}


def extra_modules():
    """{case name: source} of EXTRA."""
    return {
        f"extra_{name}": MODULE.format(init=init, forward=forward, shape=shape)
        for name, (init, forward, shape) in EXTRA.items()
    }


def user_modules():
    """{case name: source} of the small problems the heuristic's tests define at module level."""
    cases = {}
    for name in TEST_MODULES:
        spec = importlib.util.spec_from_file_location(f"ks_golden_{name}", Path(__file__).with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for attr, value in vars(module).items():
            if attr.isupper() and isinstance(value, str) and "class Model" in value and "def get_inputs" in value:
                cases.setdefault(f"user_{attr.lower()}", value)
    return cases


def kernelbench(levels):
    """{case name: source} of KernelBench's problems of LEVELS."""
    rows = [json.loads(line) for line in PROBLEMS.read_text().splitlines() if line.strip()]
    return {f"l{r['level']}_{r['name']}": r["code"] for r in rows if r["level"] in levels}


def analysis_of(source, cache, folder):
    """The analysis of SOURCE, from CACHE when an earlier run made it."""
    from agent.heuristic.analyze import analyze

    key = cache / (hashlib.sha256(source.encode()).hexdigest()[:24] + ".pkl")
    if key.exists():
        return pickle.loads(key.read_bytes())
    path = Path(folder) / "problem.py"
    path.write_text(source)
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            analysis = analyze(str(path))
    except Exception as exc:  # noqa: BLE001 -- a problem that does not trace is recorded as such, not fatal
        analysis = {"ok": False, "reason": f"{type(exc).__name__}: {exc}"}
    key.write_bytes(pickle.dumps(analysis))
    return analysis


def write_case(out, name, source, analysis):
    """The case's files under OUT/chain/NAME, or one line of OUT/other.txt for a DAG plan or a refusal."""
    from agent.heuristic.codegen import workspace_files
    from agent.heuristic.plan import Unsupported, make_plan

    try:
        plan = make_plan(analysis)
    except Unsupported as exc:
        return f"{name}: unsupported: {exc}"
    except Exception as exc:  # noqa: BLE001 -- the planner's crash is part of what the folder records
        return f"{name}: planner error: {type(exc).__name__}: {exc}"
    if plan.kind == "graph":
        return f"{name}: DAG plan"
    folder = out / "chain" / name
    for device in ("cuda", "cpu"):
        for rel, text in workspace_files(plan, device, source).items():
            path = folder / device / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        (folder / device / "specialized.txt").write_text(f"{plan.specialized}\n")
    (folder / "plan.json").write_text(json.dumps(plan.to_json(), indent=1, sort_keys=True, default=repr) + "\n")
    return None


def write_shared(out):
    """The C text that the DAG planner's code generator imports from the chain's."""
    from agent.heuristic import codegen

    shared = out / "shared"
    shared.mkdir(parents=True, exist_ok=True)
    for name in ("CUDA_PRELUDE", "WARP_REDUCE", "HEADER", "CUDNN_PRELOAD"):
        (shared / f"{name}.txt").write_text(getattr(codegen, name))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--levels", default="1,2")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ks-golden-cache")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    sys.path.insert(0, str(ROOT))
    args.cache.mkdir(parents=True, exist_ok=True)
    cases = {**kernelbench([int(level) for level in args.levels.split(",")]), **user_modules(), **extra_modules()}
    others = []
    with tempfile.TemporaryDirectory(prefix="ks-golden-") as folder:
        for name, source in sorted(cases.items()):
            line = write_case(args.out, name, source, analysis_of(source, args.cache, folder))
            if line:
                others.append(line)
    (args.out / "other.txt").write_text("".join(line[:400].replace("\n", " ") + "\n" for line in others))
    write_shared(args.out)
    chains = len(cases) - len(others)
    print(f"{len(cases)} cases: {chains} chain plans under {args.out / 'chain'}, {len(others)} others in other.txt")


if __name__ == "__main__":
    main()
