"""The heuristic policy end to end on the CPU target, over user-style GEMM and convolution problems written here: each
verdict's speedup against eager PyTorch, side by side (target: Linear + activation at >= 0.8x eager).

    python -m bench.cpu_gemm [--only NAME,NAME] [--compiled]

Each problem is one episode, as `python -m agent optimize PROBLEM.py --policy heuristic --device cpu` runs it, in a
fresh sandbox cache, so the eager baseline is measured in this run beside the solution. The sandbox's thread count
(KS_CPU_THREADS, default min(4, cores)) holds for both. A problem the heuristic does not plan shows its reason.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

from bench._gpu import private_cache, table

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
PROBLEMS = {
    # A transformer-sized projection of a few hundred rows: the CPU GEMM issue 16 measured at 0.24x eager.
    "linear_gelu": (
        "Linear + activation",
        """class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(1024, 1024)

    def forward(self, x):
        return F.gelu(self.proj(x))


def get_inputs():
    return [torch.randn(256, 1024)]


def get_init_inputs():
    return []
""",
    ),
    "linear_silu_up": (
        "Linear + activation",
        """class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(768, 3072)

    def forward(self, x):
        return F.silu(self.up(x))


def get_inputs():
    return [torch.randn(4, 96, 768)]


def get_init_inputs():
    return []
""",
    ),
    "gated_mlp": (
        "gated MLP",
        """class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(512, 1376, bias=False)
        self.up = nn.Linear(512, 1376, bias=False)
        self.down = nn.Linear(1376, 512, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


def get_inputs():
    return [torch.randn(256, 512)]


def get_init_inputs():
    return []
""",
    ),
    "attention_scores": (
        "batched matmul",
        """class Model(nn.Module):
    def forward(self, q, k):
        return torch.matmul(q, k) * 0.125


def get_inputs():
    return [torch.randn(16, 256, 64), torch.randn(16, 64, 256)]


def get_init_inputs():
    return []
""",
    ),
    "conv2d_relu": (
        "Conv2d + activation",
        """class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(32, 64, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(8, 32, 56, 56)]


def get_init_inputs():
    return []
""",
    ),
}
TARGET = {"Linear + activation": 0.8}


def run(name, source, compiled):
    from agent.loop import Episode, EpisodeConfig
    from agent.policies import make_policy
    from sandbox import EvalConfig

    with tempfile.TemporaryDirectory(prefix="ks-bench-cpu-gemm-") as tmp:
        problem = Path(tmp) / f"{name}.py"
        problem.write_text(HEADER + source)
        config = EpisodeConfig(device="cpu", max_turns=8, eval=EvalConfig(device="cpu", compiled_baseline=compiled))
        t0 = time.monotonic()
        traj = Episode(problem, make_policy("heuristic"), Path(tmp) / "workspace", config).run()
        return traj, time.monotonic() - t0


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.cpu_gemm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated problem names: " + ", ".join(PROBLEMS))
    parser.add_argument("--compiled", action="store_true", help="also time torch.compile (its first call is slow)")
    args = parser.parse_args(argv)
    only = set(filter(None, args.only.split(",")))
    from sandbox import settings

    rows = []
    with private_cache("ks-bench-cpu-gemm-"):
        for name, (kind, source) in PROBLEMS.items():
            if only and name not in only:
                continue
            traj, seconds = run(name, source, args.compiled)
            v = traj.verdict
            target = TARGET.get(kind)
            if v["correct"]:
                speedup = v["speedup_vs_eager"]
                met = "" if target is None else ("met" if speedup >= target else "MISSED")
                rows.append(
                    [
                        name,
                        kind,
                        f"{v['runtime_ms']:.3f}",
                        f"{v['eager_ms']:.3f}",
                        f"{speedup:.2f}x",
                        f"{v['speedup_vs_compiled']:.2f}x" if v.get("speedup_vs_compiled") else "-",
                        f">= {target}x {met}" if target else "-",
                        f"{seconds:.0f}",
                    ]
                )
            else:
                refused = traj.stop_reason.startswith("policy_error: no kernel written")
                rows.append(
                    [name, kind, "-", "-", "-", "-", "not planned" if refused else v["status"], f"{seconds:.0f}"]
                )
            print(f"{name}: {v['status']}; {traj.stop_reason[:300]}", flush=True)
    print(f"\nCPU target, {settings.CPU_THREADS} thread(s) (KS_CPU_THREADS), medians of the sandbox's timing")
    print(
        table(
            ["problem", "kind", "solution ms", "eager ms", "vs eager", "vs compile", "target or status", "episode s"],
            rows,
        )
    )
    print(
        "reproduce: python -m bench.cpu_gemm"
        + (f" --only {args.only}" if args.only else "")
        + (" --compiled" if args.compiled else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
