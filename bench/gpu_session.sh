#!/usr/bin/env bash
# One call on a lent GPU machine: checks, the GPU test suite, the GPU benchmarks; logs under $OUT, a summary last.
#
#   bench/gpu_session.sh [all|tests|bench|rest|preflight]        (default: all)
#
#   all        preflight, the quick tests, the three benchmarks, then the rest of tests/gpu in the time left
#   tests      preflight and the whole `make test-gpu`
#   bench      the three benchmarks (about 4 minutes)
#   rest       the tests that `all` leaves for last: marked slow (the classic binding's precompiled header), and
#              tests/gpu/test_package_gpu.py (wheels built and installed in fresh environments)
#   preflight  only the checks of the machine (seconds)
#
# Only the repository travels: KernelBench's problems must be at tests/gpu/data/problems.jsonl beforehand.
# KS_SESSION_BUDGET_S (default 550) bounds the whole call; each part is stopped (SIGINT, so that evaluations
# clean up their jailed workers) when its share runs out, and what it logged so far stays under $OUT.
set -uo pipefail

PART="${1:-all}"
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/.gpu-session}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if [ -x /opt/torch/.venv/bin/python3 ]; then export PATH="/opt/torch/.venv/bin:$PATH"; fi
export GPU_PYTHON="${GPU_PYTHON:-python3}"
export KS_GPU_REPORT="$OUT/verdicts.json"
BUDGET="${KS_SESSION_BUDGET_S:-550}"
START=$(date +%s)
PARTS=()  # one line per part, for the summary
rm -f "$KS_GPU_REPORT"

left() { echo $((BUDGET - ($(date +%s) - START))); }
min() { if [ "$1" -lt "$2" ]; then echo "$1"; else echo "$2"; fi; }

# Processes of the sandbox's jail uids (61000-90999): an evaluation stopped mid-way may leave some behind.
jailed() { if command -v ps >/dev/null; then ps -eo uid=,pid=,args= | awk '$1 >= 61000 && $1 < 91000'; fi; }

# run NAME LIMIT CMD...: CMD's output to the screen and $OUT/NAME.log, stopped after LIMIT s; a line in the summary.
run() {
  local name="$1" limit="$2"
  shift 2
  if [ "$limit" -lt 30 ]; then
    PARTS+=("$name: not run, $limit s left of the ${BUDGET} s budget")
    return
  fi
  local t0 rc note before leftovers
  t0=$(date +%s)
  before=$(jailed)
  echo "=== $name (at most ${limit} s): $*"
  # Through bash -c, so that the exported shell functions below can be run too.
  timeout --signal=INT --kill-after=30 "$limit" bash -c '"$@"' _ "$@" 2>&1 | tee "$OUT/$name.log"
  rc=${PIPESTATUS[0]}
  note="exit $rc"
  if [ "$rc" -eq 124 ]; then note="STOPPED at its ${limit} s limit"; fi
  PARTS+=("$name: $note after $(($(date +%s) - t0)) s")
  leftovers=$(jailed | grep -vxF -e "${before:-no such line}" | head -5)
  if [ -n "$leftovers" ]; then PARTS+=("$name: jailed processes it left running:"$'\n'"$leftovers"); fi
}

pytest_gpu() {  # pytest_gpu [-k EXPRESSION]: tests/gpu through `make test-gpu` where make exists
  local addopts="-v -rfEs --durations=30"
  if [ -n "$1" ]; then addopts="$addopts -k '$1'"; fi
  if command -v make >/dev/null; then
    PYTEST_ADDOPTS="$addopts" make --no-print-directory test-gpu GPU_PYTHON="$GPU_PYTHON"
  else
    PYTEST_ADDOPTS="$addopts" "$GPU_PYTHON" -m pytest tests/gpu -p no:cacheprovider -p no:django
  fi
}

preflight() {
  echo "--- machine"
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader || echo "nvidia-smi FAILED"
  echo "cores $(nproc), $(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo) GiB, uid $(id -u), $(uname -r)"
  echo "--- tools"
  for tool in "$GPU_PYTHON" nvcc ninja g++ make unshare; do printf '%-10s %s\n' "$tool" "$(command -v "$tool" || echo MISSING)"; done
  nvcc --version | tail -n 2 | head -n 1
  "$GPU_PYTHON" - <<'EOF'
import importlib, os, sys
print("python", sys.version.split()[0])
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(),
      torch.cuda.get_device_name() if torch.cuda.is_available() else "")
for name in ("pytest", "pytest_timeout", "psutil", "numpy", "ninja"):
    try:
        print(f"{name:14} {getattr(importlib.import_module(name), '__version__', 'present')}")
    except ImportError:
        print(f"{name:14} MISSING")
from sandbox.native import build
home = build._cuda_home()
tc = build.toolchain("cuda")
print(f"sandbox toolchain: CUDA home {home}, sm_{tc['arch']}, {tc['nvcc_version']}, {tc['cxx_version']}")
for rel in ("bin/nvcc", "include/cuda_runtime.h", "include/cublas_v2.h", "include/cublasLt.h", "include/cusparse.h",
            "include/cusolverDn.h", "lib64/libcudart.so", "lib64/libcublas.so", "lib64/libcublasLt.so"):
    state = "ok" if os.path.exists(os.path.join(home, rel)) else "MISSING"
    print(f"  {rel:24} {state}")
inc = os.path.join(os.path.dirname(torch.__file__), "include", "torch", "csrc", "stable", "library.h")
text = open(inc).read() if os.path.exists(inc) else ""
print("stable library.h", "present" if text else "MISSING", "| TORCH_BOX", "yes" if "define TORCH_BOX" in text else "no",
      "| namespace stringized by", "C10_STRINGIZE" if "C10_STRINGIZE(ns)" in text else "#ns")
from sandbox.isolation import isolation_level
print("sandbox isolation", isolation_level())
print("problems.jsonl", "present" if os.path.exists("tests/gpu/data/problems.jsonl") else "MISSING: copy ../shared/kernelbench/problems.jsonl to tests/gpu/data/")
EOF
  echo "--- smoke: build, load and run two native workspaces (ReLU; cuBLAS matmul)"
  KS_CACHE_DIR="$(mktemp -d)" "$GPU_PYTHON" - <<'EOF'
import sys, time, torch
from sandbox.errors import BuildError
from sandbox.native import load_extension


def build(path):
    t0 = time.perf_counter()
    try:
        return load_extension(path), time.perf_counter() - t0
    except BuildError as exc:
        sys.exit(f"building {path} FAILED: {exc}\n{exc.log[-4000:]}")


x = torch.randn(1 << 20, device="cuda")
relu, seconds = build("tests/gpu/solutions/level1/19_ReLU")
out = torch.empty_like(x)
relu.relu(x, out)
print(f"smoke: 19_ReLU built in {seconds:.1f} s, max error {(out - torch.relu(x)).abs().max().item():.1e}")
mm, seconds = build("tests/gpu/solutions/level1/1_Square_matrix_multiplication_")
a, b = torch.rand(512, 256, device="cuda"), torch.rand(256, 384, device="cuda")
c = torch.empty(512, 384, device="cuda")
mm.matmul(a, b, c)
error = (c - a.double().matmul(b.double()).float()).abs().max().item()
print(f"smoke: 1_Square_matrix_multiplication_ (cuBLAS) built in {seconds:.1f} s, max error {error:.1e}")
EOF
}

export -f pytest_gpu preflight
# What `all` runs last (-k matches marker names too): the slow tests and the packaging tests.
REST="slow or package"

case "$PART" in
  preflight)
    run preflight 120 preflight
    ;;
  tests)
    run preflight 120 preflight
    run test-gpu "$(left)" pytest_gpu ""
    ;;
  rest)
    run test-gpu-rest "$(left)" pytest_gpu "$REST"
    ;;
  bench)
    run build_speed "$(min "$(left)" 200)" "$GPU_PYTHON" -m bench.build_speed
    run repeatability "$(min "$(left)" 200)" "$GPU_PYTHON" -m bench.repeatability
    run level2_eval_time "$(left)" "$GPU_PYTHON" -m bench.level2_eval_time
    ;;
  all)
    run preflight 120 preflight
    run test-gpu "$(min $(($(left) - 200)) 330)" pytest_gpu "not ($REST)"
    run build_speed "$(min "$(left)" 100)" "$GPU_PYTHON" -m bench.build_speed
    run repeatability "$(min "$(left)" 100)" "$GPU_PYTHON" -m bench.repeatability --runs 5 --budget 0.3
    run level2_eval_time "$(min "$(left)" 70)" "$GPU_PYTHON" -m bench.level2_eval_time
    run test-gpu-rest "$(($(left) - 10))" pytest_gpu "$REST"
    ;;
  *)
    echo "usage: bench/gpu_session.sh [all|tests|bench|rest|preflight]" >&2
    exit 2
    ;;
esac

{
  echo
  echo "=== summary ($(($(date +%s) - START)) s of ${BUDGET} s; logs in $OUT)"
  printf '%s\n' "${PARTS[@]}"
  for log in "$OUT"/test-gpu*.log; do
    [ -f "$log" ] || continue
    echo "--- $(basename "$log")"
    grep -E "^(FAILED|ERROR) " "$log" | cut -c1-200
    grep -E "^=+ .*( passed| failed| error| skipped| deselected).* in [0-9.]+s" "$log" | tail -n 1
    sed -n '/sandbox verdicts (tests\/gpu)/,/^=/p' "$log" | grep -vE "^=" | cut -c1-160
  done
  for name in build_speed repeatability level2_eval_time; do
    [ -f "$OUT/$name.log" ] || continue
    echo "--- $name"
    tail -n 9 "$OUT/$name.log"
  done
  [ -f "$OUT/preflight.log" ] && { echo "--- preflight"; grep -E "MISSING|FAILED|Error|available|sandbox |smoke|stringized" "$OUT/preflight.log" | cut -c1-200; }
} | tee "$OUT/summary.txt"
