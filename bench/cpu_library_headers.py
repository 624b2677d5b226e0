"""User modules' heuristic CPU solutions built twice, with a base revision's kernel library headers and with this
tree's, timed side by side with eager PyTorch in one process: what a change to ks_attention.h, ks_gemm.h, ... is
worth end to end.

    python -m bench.cpu_library_headers [--base REV] [--only NAME,NAME] [--threads N] [--repeats R]

Both solutions are the same plan and code (this tree's planner); only the files of agent.library's CPU headers that
the base revision has differ. Each repeat flushes the cache (sandbox.timing's CPU_FLUSH_BYTES) before each of the three
calls, in turn; the medians and ratios are printed (> 1: faster). The default base precedes the blocked attention kernel
and the one-product GEMM of shared weights.
"""

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODULES = REPO / "bench" / "user_modules"


def solution(source, folder, base):
    """ModelNew of SOURCE's heuristic CPU solution written under FOLDER, the library headers taken from BASE if set."""
    from agent.heuristic.analyze import analyze
    from agent.heuristic.codegen import workspace_files
    from agent.heuristic.plan import make_plan
    from agent.library import HEADERS, PRELUDE, library_files

    folder.mkdir(parents=True)
    (folder / "problem.py").write_text(source)
    files = {**library_files("cpu"), **workspace_files(make_plan(analyze(str(folder / "problem.py"))), "cpu", source)}
    for name, path in HEADERS["cpu"].items() if base else ():
        if path != PRELUDE:
            old = subprocess.run(
                ["git", "show", f"{base}:{path.relative_to(REPO)}"], cwd=REPO, capture_output=True, text=True
            )
            files[f"kernels/{name}"] = old.stdout if old.returncode == 0 else files[f"kernels/{name}"]
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    spec = importlib.util.spec_from_file_location(f"model_new_{folder.name}", folder / "model_new.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # builds the extension
    return module.ModelNew


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.cpu_library_headers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="108ef3e", help="the revision whose library headers are the baseline")
    parser.add_argument("--only", default="mha_key_padding,torch_encoder_layer,llama_block")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=60)
    args = parser.parse_args(argv)
    import os

    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch

    from sandbox.timing import CPU_FLUSH_BYTES

    torch.set_num_threads(args.threads)
    flush = torch.empty(CPU_FLUSH_BYTES // 4)
    print("| module | eager ms | base ms | new ms | base vs eager | new vs eager | new vs base |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="ks-bench-headers-") as tmp, torch.no_grad():
        for name in args.only.split(","):
            source = (MODULES / f"{name}.py").read_text()
            reference = {}
            exec(source, reference)  # noqa: S102 -- the benchmark's own user modules
            torch.manual_seed(0)
            model = reference["Model"]().eval()
            fns = {"eager": model}
            for tag, base in (("base", args.base), ("new", None)):
                fns[tag] = solution(source, Path(tmp) / f"{name}_{tag}", base)().eval()
                fns[tag].load_state_dict(model.state_dict())
            inputs = reference["get_inputs"]()
            expected = model(*inputs)
            for tag in ("base", "new"):
                torch.testing.assert_close(fns[tag](*inputs), expected, rtol=1e-4, atol=1e-4)
            times = {tag: [] for tag in fns}
            for _ in range(args.repeats):
                for tag, fn in fns.items():
                    flush.fill_(1.0)
                    t0 = time.perf_counter()
                    fn(*inputs)
                    times[tag].append(time.perf_counter() - t0)
            ms = {tag: statistics.median(t) * 1e3 for tag, t in times.items()}
            print(
                f"| {name} | {ms['eager']:.3f} | {ms['base']:.3f} | {ms['new']:.3f} | {ms['eager'] / ms['base']:.2f}x | "
                f"{ms['eager'] / ms['new']:.2f}x | {ms['base'] / ms['new']:.2f}x |",
                flush=True,
            )
    print(
        f"reproduce: python -m bench.cpu_library_headers --base {args.base} --only {args.only} --threads {args.threads}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
