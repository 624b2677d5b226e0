"""The kernel library a fresh workspace starts with: headers in kernels/ that solutions include instead of writing
them (the kernel files' preludes, the binding's argument checks, the attention and RNN families' kernels, and on the
CPU target OpenBLAS GEMMs and convolutions)."""

import functools
from pathlib import Path

HEURISTIC = Path(__file__).with_name("heuristic")
PRELUDE = "prelude"  # a header the DAG planner writes (agent/heuristic/dag/codegen.py: prelude_headers)
# {device: {name under kernels/: the file it is copied from}}; each set is closed under its own #includes
HEADERS = {
    "cuda": {
        "ks_common.cuh": PRELUDE,
        "ks_cublas.cuh": PRELUDE,
        "ks_checks.h": HEURISTIC / "ks_checks.h",
        "ks_attention.cuh": HEURISTIC / "dag" / "ks_attention.cuh",
        "ks_rnn.cuh": HEURISTIC / "dag" / "ks_rnn.cuh",
        "ks_rnn_cell.h": HEURISTIC / "dag" / "ks_rnn_cell.h",
        "ks_scatter.cuh": HEURISTIC / "dag" / "ks_scatter.cuh",
        "ks_sort.cuh": HEURISTIC / "dag" / "ks_sort.cuh",
        "ks_sort.h": HEURISTIC / "dag" / "ks_sort.h",
    },
    "cpu": {
        "ks_math.h": PRELUDE,
        "ks_checks.h": HEURISTIC / "ks_checks.h",
        "ks_attention.h": HEURISTIC / "dag" / "ks_attention.h",
        "ks_rnn.h": HEURISTIC / "dag" / "ks_rnn.h",
        "ks_rnn_cell.h": HEURISTIC / "dag" / "ks_rnn_cell.h",
        "ks_blas.h": HEURISTIC / "ks_blas.h",
        "ks_gemm.h": HEURISTIC / "ks_gemm.h",
        "ks_conv.h": HEURISTIC / "ks_conv.h",
        "ks_erfinv.h": HEURISTIC / "dag" / "ks_erfinv.h",
        "ks_scatter.h": HEURISTIC / "dag" / "ks_scatter.h",
        "ks_sort.h": HEURISTIC / "dag" / "ks_sort.h",
    },
}


@functools.lru_cache(maxsize=None)
def library_files(device):
    """{kernels/NAME: text} of the library headers a DEVICE workspace starts with."""
    from agent.heuristic.dag.codegen import prelude_headers

    return {
        f"kernels/{name}": prelude_headers()[name] if path == PRELUDE else path.read_text()
        for name, path in HEADERS[device].items()
    }
