"""DagPlan -> native workspace files: every kernel in kernels/fused.cpp (C++) or kernels/fused.cu (CUDA), the binding
that allocates the intermediates and calls them in order, and model_new.py."""

import functools
import math
import re
from pathlib import Path

from agent.heuristic.codegen import CUDA_PRELUDE, HEADER, WARP_REDUCE, cuda_conv
from agent.heuristic.conv import HEADERS as CONV_HEADERS
from agent.heuristic.conv import cpp_conv
from agent.heuristic.dag import attention, online, rnn, scan, scatter, sort
from agent.heuristic.dag.cexpr import Emitter, Scope
from agent.heuristic.dag.ir import MATERIALIZED
from agent.heuristic.batch import Specialized
from agent.heuristic.emit import (
    BATCH_DECLARATION,
    CPP_PRELUDE,
    PARALLEL_ELEMENTS,
    batch_prologue,
    binding_checks,
    model_new_source,
    scalar_checks,
    template,
)
from agent.heuristic.gemm import HEADERS as GEMM_HEADERS
from agent.heuristic.plan import Operand, Plan

SCALAR_TYPES = {
    "float32": "Float",
    "float64": "Double",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
}
POINTER = re.compile(r"\b[abc]_n\d+\w*\b")
# A loop in a kernel's body, and its trip count where the bound is a constant (start 0, step 1 or a chunk's)
LOOP = re.compile(r"for \(int64_t \w+ = [^;]*; \w+ < (?:(\d+)(?:LL)?;)?")
# On CUDA a reduction over this many elements or more gets a block of threads per output element...
BLOCK_REDUCE = 256
# ...unless its rows are strided (a dim of at least COALESCED elements after the last reduced one) and its outputs
# many (at least THREAD_OUTPUTS): then a thread per output, whose warp's neighbours read neighbouring elements
# (a block's threads would each read a different cache line of a strided row).
COALESCED = 32
THREAD_OUTPUTS = 8192
# A shorter reduction still gets a block per output when the outputs are this few (a loss's mean over a batch): a
# lone thread would wait on each of its row's loads in turn.
FEW_OUTPUTS, SHORT_ROW = 1024, 32
# A CPU loop kernel's inner loop runs over at least this many elements of its trailing dims (Writer.rows).
NESTED_ROW = 16
# Reductions a CUDA block shares (block_reduce in families/templates/common.cuh), by source and result dtype.
BLOCK_REDUCE_DTYPES = ("float32", "float64", "int64", "int32", "bool")


def _block_per_output(node):
    """Whether a CUDA block shares each output of the reduction NODE (else a thread computes each)."""
    if node.kind != "reduce" or node.attrs["op"] in ("argmax", "argmin"):
        return False
    if node.args[0].dtype not in BLOCK_REDUCE_DTYPES or node.dtype not in BLOCK_REDUCE_DTYPES:
        return False
    dims, shape = node.attrs["dims"], node.args[0].shape
    row = math.prod(shape[d] for d in dims)
    strided = math.prod(shape[max(dims) + 1 :]) >= COALESCED
    if strided and node.numel >= THREAD_OUTPUTS:
        return False
    return row >= BLOCK_REDUCE or (row >= SHORT_ROW and node.numel <= FEW_OUTPUTS)


def _indent(lines, depth):
    return "".join(" " * depth + line + "\n" for line in lines)


class Writer:
    """The kernels of one plan on one device: C functions named k_<node>, each listing the buffers it reads."""

    def __init__(self, plan, device, decisions=None):
        self.plan, self.device = plan, device
        # Choices of kernel shape made by size (a block per output element of a long reduction), by node: FIXED
        # takes those of the problem's batch size for the kernels written at others (batch.py merges only numbers).
        self.fixed, self.decisions = decisions or {}, {}
        self.emitter = Emitter(plan.buffers, device, accumulate_double=device == "cpu")
        self.functions = []  # (name, [pointer names read], C type written, source, the kernel whose buffer it writes)
        self.current = None  # the kernel being written
        self.headers = set()

    def pointers(self, text, written):
        names = sorted(
            set(POINTER.findall(text)) - {written}, key=lambda n: (n[0], int(re.sub(r"\D", "", n[2:]) or 0), n)
        )
        return [n for n in names if n in self.plan.buffers.values() and not n.startswith("c_")]

    def ctype_of(self, pointer):
        for node in self.plan.graph.nodes:
            if self.plan.buffers.get(node.name) == pointer:
                return node.ctype
        return next(k.node.ctype for k in self.plan.kernels if self.plan.buffers.get(k.node.name) == pointer)

    def params(self, reads, out_type, qualifier="__restrict__ "):
        ins = "".join(f"const {self.ctype_of(p)}* {qualifier}{p}, " for p in reads)
        return f"{ins}{out_type}* {qualifier}out"

    def loop(self, kernel):
        """A loop over KERNEL's elements; a reduction's kernel, and one that finishes reductions in its epilogue
        (schedule.py's "reductions"), on CUDA a block per element where the reductions are long (_block_per_output)."""
        node = kernel.node
        scope = Scope()
        self.emitter.computing = node.name
        nodes = {n.name: n for n in self.plan.graph.nodes}
        reductions = [node] if node.kind == "reduce" else [nodes[r] for r in kernel.layout.get("reductions", [])]
        block = self.device == "cuda" and reductions and all(_block_per_output(r) for r in reductions)
        cuda_block = self.fixed.get(node.name, bool(block))
        self.decisions[node.name] = cuda_block
        inner = None if cuda_block else self.rows(node)
        if inner:
            self.emitter.nest("i", inner)
        for reduction in reductions:
            # the finished value, once per element: the epilogue reads it wherever it reads the reduction
            finished = self.block_reduce(scope, reduction) if cuda_block else self.emitter.value(scope, reduction, "i")
            self.emitter.known[reduction.name] = finished
        value = self.emitter.value(scope, node, "i")
        store = f"out[i] = ({node.ctype})({value});"
        scope.lines.append(f"if (threadIdx.x == 0) {store}" if cuda_block else store)
        self.emitter.known.clear()
        self.emitter.unnest("i")
        self.function(node, scope.lines, node.numel, cuda_block, inner)

    def block_reduce(self, scope, node):
        """The reduction NODE at element i, its row shared by a CUDA block's threads: a name holding the finished value
        in every thread."""
        acc, t, final = self.emitter.reduce_loop(scope, node, "i", "threadIdx.x", "BLOCK")
        # NaN wins, as in torch's max and min (fmaxf would drop it)
        extreme = (
            ("a > b || a != a ? a : b", "a < b || a != a ? a : b")
            if t in ("float", "double")
            else ("a > b ? a : b", "a < b ? a : b")
        )
        op = {
            "sum": "a + b",
            "mean": "a + b",
            "max": extreme[0],
            "min": extreme[1],
            "prod": "a * b",
            "any": f"({t})(a || b)",
            "all": f"({t})(a && b)",
        }[node.attrs["op"]]
        scope.lines.append(f"{acc} = block_reduce({acc}, []({t} a, {t} b) {{ return {op}; }});")
        return self.emitter.define(scope, node.ctype, final)

    def rows(self, node):
        """On the CPU, the length of the inner loop of NODE's kernel: the product of its trailing dims (never dim 0,
        the batch's) up to at least NESTED_ROW elements; None for a flat loop. Its flat index i = io * inner + il then
        divides by its own shape's strides only in the outer loop (indexing.py), and the inner loop, division-free,
        vectorizes."""
        if self.device != "cpu" or len(node.shape) < 2:
            return None
        inner = 1
        for size in reversed(node.shape[1:]):
            inner *= size
            if inner >= NESTED_ROW:
                return inner
        return inner if inner >= NESTED_ROW // 2 else None

    def maxsum(self, kernel):
        """A row's max and sum of exp(x - max) in one pass (online.py), a CUDA block per row as long as a reduction's."""
        node = kernel.node
        self.emitter.computing = node.name
        length = math.prod(node.args[0].shape[d] for d in node.attrs["dims"])
        cuda_block = self.fixed.get(node.name, self.device == "cuda" and length >= BLOCK_REDUCE)
        self.decisions[node.name] = cuda_block
        scope = Scope()
        online.statistics(self.emitter, scope, node, "i", self.device, cuda_block)
        self.function(node, scope.lines, node.numel // 2, cuda_block)

    def function(self, node, lines, n, cuda_block, inner=None):
        """The function writing NODE's buffer: LINES for each i < N, on CUDA a block's threads sharing each i when
        CUDA_BLOCK, else a thread each; on the CPU in rows of INNER (i = io * INNER + il) where given."""
        reads = self.pointers("".join(lines), "")
        name = f"k_{node.name}"
        if self.device == "cpu" and inner:
            work = _work(lines)
            # an inner loop without loops of its own is declared SIMD: GCC's own analysis gives up on an index like
            # il / 2 + il % 2 * 1024 (a permutation's), which the vectorizer can still load by gathers
            simd = "" if work > 1 else "        #pragma omp simd\n"
            source = (
                f"void {name}({self.params(reads, node.ctype)}) {{\n"
                f"    #pragma omp parallel for schedule(static) if({n}LL * {work}LL >= {PARALLEL_ELEMENTS})\n"
                f"    for (int64_t io = 0; io < {n // inner}LL; ++io) {{\n{simd}"
                f"        for (int64_t il = 0; il < {inner}LL; ++il) {{\n"
                f"            const int64_t i = io * {inner}LL + il;\n{_indent(lines, 12)}        }}\n    }}\n}}\n"
            )
        elif self.device == "cpu":
            work = _work(lines)
            source = (
                f"void {name}({self.params(reads, node.ctype)}) {{\n"
                f"    #pragma omp parallel for schedule(static) if({n}LL * {work}LL >= {PARALLEL_ELEMENTS})\n"
                f"    for (int64_t i = 0; i < {n}LL; ++i) {{\n{_indent(lines, 8)}    }}\n}}\n"
            )
        elif cuda_block:
            source = (
                f"__global__ void g_{node.name}({self.params(reads, node.ctype)}) {{\n"
                f"    for (int64_t i = blockIdx.x; i < {n}LL; i += gridDim.x) {{\n{_indent(lines, 8)}"
                f"    }}\n}}\n"
                f"void {name}({self.params(reads, node.ctype, '')}, cudaStream_t stream) {{\n"
                f"    const int blocks = (int)({n}LL < ks_grid_limit() ? {n}LL : ks_grid_limit());\n"
                f"    g_{node.name}<<<blocks, BLOCK, 0, stream>>>({''.join(r + ', ' for r in reads)}out);\n}}\n"
            )
        else:
            source = (
                f"__global__ void g_{node.name}({self.params(reads, node.ctype)}) {{\n"
                f"    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < {n}LL; "
                f"i += (int64_t)gridDim.x * BLOCK) {{\n{_indent(lines, 8)}    }}\n}}\n"
                f"void {name}({self.params(reads, node.ctype, '')}, cudaStream_t stream) {{\n"
                f"    const int64_t wanted = ({n}LL + BLOCK - 1) / BLOCK;\n"
                f"    const int blocks = (int)(wanted < ks_grid_limit() ? wanted : ks_grid_limit());\n"
                f"    g_{node.name}<<<blocks, BLOCK, 0, stream>>>({''.join(r + ', ' for r in reads)}out);\n}}\n"
            )
        self.functions.append((name, reads, node.ctype, source, self.current))

    def scan(self, kernel):
        name, reads, source = scan.source(kernel.node, self.emitter, self.device, self.pointers, self.params)
        self.functions.append((name, reads, kernel.node.ctype, source, kernel))

    def scatter(self, kernel):
        self.family(kernel, scatter.source)

    def sort(self, kernel):
        self.family(kernel, sort.source)

    def family(self, kernel, source):
        """KERNEL written by a family's SOURCE(node, emitter, device, pointers, params)."""
        name, reads, text, headers = source(kernel.node, self.emitter, self.device, self.pointers, self.params)
        self.headers |= set(headers)
        self.functions.append((name, reads, kernel.node.ctype, text, kernel))

    def attention(self, kernel):
        name, reads, source, headers = attention.source(kernel, self.plan.buffers, self.device, self.params)
        self.headers |= set(headers)
        self.functions.append((name, reads, kernel.node.ctype, source, kernel))

    def rnn(self, kernel):
        name, reads, source, headers = rnn.source(self, kernel)
        self.headers |= set(headers)
        self.functions.append((name, reads, kernel.node.ctype, source, kernel))

    def epilogue(self, kernel):
        """The loop kernel after GEMM KERNEL that the CPU GEMM can finish in its tiles while they are hot: an
        elementwise node of the GEMM's shape, the GEMM's only reader, reading it at the same element and nothing
        written between the two; None when there is none."""
        if self.device != "cpu":
            return None
        node = kernel.node
        at = self.plan.kernels.index(kernel)
        later = self.plan.kernels[at + 1 :]
        if self.plan.graph.users().get(node.name, 0) != 1 or not later:
            return None
        candidate = next(
            (k for k in later if k.kind == "loop" and not k.target.startswith("buffer:") and _reads(k.node, node)), None
        )
        if candidate is None or candidate.node.kind != "pointwise" or candidate.node.shape != node.shape:
            return None
        between = {self.plan.buffers[k.node.name] for k in later[: later.index(candidate)]}
        emitter = Emitter(self.plan.buffers, self.device, accumulate_double=True)
        emitter.computing = candidate.node.name
        scope = Scope()
        emitter.value(scope, candidate.node, "i")
        text = "\n".join(scope.lines)
        own = self.plan.buffers[node.name]
        if re.findall(rf"\b{own}\[([^\]]*)\]", text) != ["i"] or between & set(POINTER.findall(text)):
            return None
        return candidate

    def gemm(self, kernel):
        node, g = kernel.node, kernel.layout
        a, b = self.plan.buffers[g["a"].name], self.plan.buffers[g["b"].name]
        name = f"k_{node.name}"
        batch, m, n, k = g["batch"], g["m"], g["n"], g["k"]
        if self.device == "cpu":
            self.headers |= set(GEMM_HEADERS)
            parallel = f"{batch}LL * {m}LL * {n}LL * {k}LL >= {1 << 22}LL"
            fused = self.epilogue(kernel)
            reads, finish = list(dict.fromkeys([a, b])), "[](int64_t, int64_t, int64_t) {}"  # x @ x.T reads x once
            if fused is not None:
                self.fused.add(fused.node.name)
                own = self.plan.buffers[node.name]
                self.emitter.computing = fused.node.name
                scope = Scope()
                self.emitter.nest("i", n, outer="row", within="j")  # the tile's loop: i = row * n + j
                value = self.emitter.value(scope, fused.node, "i")
                self.emitter.unnest("i")
                lines = [line.replace(f"{own}[i]", "out[i]") for line in scope.lines]
                lines.append(f"out[i] = ({fused.node.ctype})({value});")
                extra = [p for p in self.pointers("\n".join(lines), "") if p not in (a, b)]
                reads = list(dict.fromkeys([a, b])) + extra
                finish = (
                    "[&](int64_t row, int64_t j0, int64_t j1) {\n"
                    f"        for (int64_t j = j0; j < j1; ++j) {{\n            const int64_t i = row * {n}LL + j;\n"
                    + _indent(lines, 12)
                    + "        }\n    }"
                )
                kernel = fused
            ins = "".join(f"const {self.ctype_of(p)}* __restrict__ {p}, " for p in reads)
            source = (
                '#include "ks_gemm.h"\n'
                f"void {name}({ins}float* __restrict__ out) {{\n"
                f"    const KsGemm g{{{batch}, {m}, {n}, {k}, {str(g['transposed_b']).lower()}, "
                f"{g['w_stride']}}};\n"
                f"    ks_gemm(g, {a}, {b}, out, {parallel}, {finish});\n}}\n"
            )
            self.functions.append((name, reads, "float", source, kernel))
            return
        op = "CUBLAS_OP_T" if g["transposed_b"] else "CUBLAS_OP_N"
        ldb = k if g["transposed_b"] else n
        source = (
            f"void {name}({''.join(f'const float* {p}, ' for p in dict.fromkeys([a, b]))}float* out, "
            f"cudaStream_t stream) {{\n"
            f"    cublasHandle_t h = ks_cublas();\n    cublasSetStream(h, stream);\n"
            f"    const float alpha = 1.0f, beta = 0.0f;\n"
            f"    // row-major out [m, n] = a [m, k] @ b, as column-major out^T = b^T a^T\n"
            f"    cublasStatus_t status = cublasGemmStridedBatchedEx(h, {op}, CUBLAS_OP_N, {n}, {m}, {k}, "
            f"&alpha, {b}, CUDA_R_32F, {ldb}, {g['w_stride']}LL, {a}, CUDA_R_32F, {k}, {m * k}LL, &beta, out, "
            f"CUDA_R_32F, {n}, {m * n}LL, {batch}, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);\n"
            f'    if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cuBLAS GEMM failed: " + '
            f"std::to_string((int)status));\n}}\n"
        )
        self.functions.append((name, list(dict.fromkeys([a, b])), "float", source, kernel))

    def conv(self, kernel):
        # the geometry is the operands' own: a buffer they are read from may be of another shape (a reshape's base)
        node, layout = kernel.node, kernel.layout
        x, w = node.args
        dims = len(x.shape) - 2
        conv = {
            "transposed": node.attrs["transposed"],
            "dims": dims,
            "in_shape": list(x.shape),
            "w_shape": list(w.shape),
            "conv_shape": list(node.shape),
            "stride": node.attrs["stride"],
            "padding": node.attrs["padding"],
            "dilation": node.attrs["dilation"],
            "output_padding": node.attrs["output_padding"],
            "groups": node.attrs["groups"],
        }
        plan = Plan(
            "conv",
            list(node.shape),
            main=Operand("x", "input", 0, x.shape),
            weight=Operand("w", "param", "w", w.shape),
            conv=conv,
            body=["const float result = acc;"],
            describe="convolution",
        )
        if self.device == "cpu":
            self.headers |= set(CONV_HEADERS)
            text, prelude, call = cpp_conv(plan), CPP_PRELUDE, "run_fused(x, w, out);"
            signature = "const float* x, const float* w, float* out"
        else:
            text, prelude, call = (
                cuda_conv(plan, 256),
                CUDA_PRELUDE.format(block=256),
                "launch_fused(x, w, out, stream);",
            )
            signature = "const float* x, const float* w, float* out, cudaStream_t stream"
        body = text[len(prelude) :]
        includes = [line for line in body.splitlines() if line.startswith("#include")]
        body = "\n".join(line for line in body.splitlines() if not line.startswith("#include"))
        name = f"k_{node.name}"
        source = (
            "\n".join(includes) + f"\nnamespace ns_{node.name} {{\n{body}\n}}\n"
            f"void {name}({signature}) {{ ns_{node.name}::{call} }}\n"
        )
        buffers = [self.plan.buffers[layout["x"].name], self.plan.buffers[layout["w"].name]]
        self.functions.append((name, buffers, "float", source, kernel))

    def write(self):
        self.fused = set()  # loop nodes a GEMM finished in its epilogue
        for kernel in self.plan.kernels:
            if kernel.node.name in self.fused:
                continue
            self.current = kernel
            getattr(self, kernel.kind)(kernel)
        constants = "".join(
            f"static const {n.ctype} c_{n.name}[] = {{{', '.join(_c_number(v, n.dtype) for v in n.attrs['values'])}}};\n"
            for n in self.plan.graph.nodes
            if n.kind == "constant"
        )
        sources = [f[3] for f in self.functions]
        self.headers |= self.emitter.headers
        includes = sorted(
            {line for s in sources for line in s.splitlines() if line.startswith("#include")}
            | {f'#include "{header}"' for header in self.emitter.headers}
        )
        sources = [
            "\n".join(line for line in s.splitlines() if not line.startswith("#include")) + "\n" for s in sources
        ]
        # The prelude is the kernel library's (prelude_headers): a solution includes it rather than writing it out.
        if self.device == "cpu":
            prelude = '#include "ks_math.h"\n'
            self.headers.add("ks_math.h")
        else:
            gemm = any(k.kind in ("gemm", "rnn") for k in self.plan.kernels)
            prelude = '#define BLOCK 256\n#include "ks_common.cuh"\n' + ('#include "ks_cublas.cuh"\n' if gemm else "")
            self.headers |= {"ks_common.cuh"} | ({"ks_cublas.cuh"} if gemm else set())
        return (
            prelude + "".join(line + "\n" for line in includes if line not in prelude) + constants + "\n".join(sources)
        )


def _work(lines):
    """The operations per element of a CPU kernel's body LINES, for its OpenMP threshold: 1, plus the trip count of each
    loop it runs (64 where that is not a constant), so that a kernel of few long rows (a softmax's statistics over 64
    rows of 1000) is shared by the threads as a long elementwise one is."""
    return 1 + sum(int(m.group(1)) if m.group(1) else 64 for m in LOOP.finditer("\n".join(lines)))


def _reads(node, target):
    """Whether NODE's value, computed where it is read, reads TARGET (through views and elementwise operators; a
    stored node's own inputs are not read again)."""
    seen, stack = set(), list(node.args)
    while stack:
        current = stack.pop()
        if current is target:
            return True
        if current.name in seen or current.kind in MATERIALIZED:
            continue
        seen.add(current.name)
        stack += current.args
    return False


CUBLAS_HANDLE = """#include <cublas_v2.h>
#include <stdexcept>
static cublasHandle_t ks_cublas() {
    // One handle per process: creating one per call costs more than a small GEMM.
    static cublasHandle_t h = nullptr;
    if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    return h;
}
"""


@functools.cache
def prelude_headers():
    """{header: text} of the preludes the DAG planner's kernel files include: on CUDA ks_common.cuh (includes, BLOCK
    unless the file defines it first, the device's grid limit, the block reduction and the online softmax's pairs)
    and ks_cublas.cuh (the process's cuBLAS handle); on the CPU ks_math.h (branch-free float math that vectorizes)."""
    once = "#pragma once\n"
    return {
        "ks_common.cuh": "// The CUDA kernels' prelude (Kernel Studio's kernel library).\n"
        + once
        + CUDA_PRELUDE.format(block=256)
        + "#include <limits>\n#include <stdexcept>\n#include <string>\n"
        + WARP_REDUCE,
        "ks_cublas.cuh": "// The process's cuBLAS handle (Kernel Studio's kernel library).\n" + once + CUBLAS_HANDLE,
        "ks_math.h": "// The C++ kernels' prelude (Kernel Studio's kernel library).\n"
        + once
        + CPP_PRELUDE
        + "#include <limits>\n",
    }


@functools.cache
def _replay_support():
    """ks_replay.h, beside this module: the binding's whole-forward replay, written into binding.cpp itself (the
    binding is compiled on its own, without the kernels' folder on its include path)."""
    return (Path(__file__).parent / "ks_replay.h").read_text()


def _c_number(value, dtype):
    if dtype == "bool":
        return "true" if value else "false"
    if dtype in ("float32", "float64"):
        return f"{float(value)!r}f".replace("inff", "INFINITY").replace("nanf", "NAN")
    return f"{int(value)}LL"


def _arguments(plan, once=False):
    """The leaves the binding's fused operator takes (ONCE: its fold operator), in order: model inputs by position,
    then parameters, then buffers, then the folded values."""
    functions = [f for f in plan.writer.functions if f[4].once == once]
    live = {p for f in functions for p in f[1]}
    targets = {f[4].target for f in functions}
    leaves = [
        n
        for n in plan.graph.nodes
        if n.kind in ("input", "param", "buffer", "folded")
        and (plan.buffers[n.name] in live or (n.kind == "buffer" and f"buffer:{n.attrs['ref']}" in targets))
    ]
    order = {"input": 0, "param": 1, "buffer": 2, "folded": 3}
    return sorted(leaves, key=lambda n: (order[n.kind], n.attrs["ref"] if n.kind in ("input", "folded") else 0))


def _steps(plan, device, functions, first, by_target, stream):
    """(allocations, calls) of FUNCTIONS in order: each output buffer allocated like FIRST, each kernel called on
    STREAM (an expression)."""
    writer, allocs, calls = plan.writer, [], []
    for name, reads, ctype, _, kernel in functions:
        if kernel.target.startswith("buffer:"):
            out = f"({ctype}*){plan.buffers[by_target[kernel.target].name]}.data_ptr()"
        else:
            out_name = plan.buffers[kernel.node.name]
            shape = plan.output_shape if kernel.node is plan.output else kernel.node.shape
            dims = ", ".join(str(d) for d in shape)
            allocs.append(
                f"{out_name} = torch::stable::new_empty({first}, {{{dims}}}, "
                f"torch::headeronly::ScalarType::{SCALAR_TYPES[kernel.node.dtype]});"
            )
            out = f"({ctype}*){out_name}.data_ptr()"
        ptrs = "".join(f"(const {writer.ctype_of(p)}*){p}.data_ptr(), " for p in reads)
        calls.append(f"{name}({ptrs}{out}{f', {stream}' if device == 'cuda' else ''});")
    return allocs, calls


def _leaf_checks(plan, leaves, reason):
    return binding_checks(
        [
            (plan.buffers[n.name], f"input {n.attrs['ref']}", n.shape, None)
            if n.kind == "input"
            else (plan.buffers[n.name], f"{n.kind} {n.attrs['ref']}", None, n.numel)
            for n in leaves
        ],
        reason,
    )


def _replayed(plan, leaves, allocs, calls, stream_decl):
    """fused()'s body where its kernels replay as one CUDA graph (ks_replay.h)."""
    output = plan.buffers[plan.output.name]
    buffers = [b for b in (a.split(" = ", 1)[0] for a in allocs) if b != output] + [output]
    inputs = [plan.buffers[n.name] for n in leaves if n.kind == "input"]
    statics = [plan.buffers[n.name] for n in leaves if n.kind != "input"]
    return (
        f"{stream_decl}"
        f"    Tensor {', '.join(buffers)};\n"
        "    auto allocate = [&]() {\n" + "".join(f"        {a}\n" for a in allocs) + "    };\n"
        "    auto launch = [&](cudaStream_t s) {\n" + "".join(f"        {c}\n" for c in calls) + "    };\n"
        f"    return ks_forward({{{', '.join('&' + i for i in inputs)}}}, {{{', '.join('&' + t for t in statics)}}}, "
        f"{{{', '.join('&' + b for b in buffers)}}}, (cudaStream_t)stream, allocate, launch);\n"
    )


def binding(plan, device, leaves, batch=None, reason=None, replay=False):
    """binding.cpp of PLAN: checks, buffers and kernel calls in order (REPLAY: replayed as one CUDA graph); and, where
    the plan folds parameter-only values, the fold operator that computes them. BATCH: the leaf whose dim 0 the kernels
    read at run time (None: they keep the problem's shapes, for REASON)."""
    writer = plan.writer
    stream = ", cudaStream_t" if device == "cuda" else ""
    decls = []
    for name, reads, ctype, _, _ in writer.functions:
        params = ", ".join(f"const {writer.ctype_of(p)}*" for p in reads)
        decls.append(f"void {name}({params}{', ' if reads else ''}{ctype}*{stream});")
    if not leaves:
        raise ValueError("a plan without any input")
    folded = _arguments(plan, once=True) if plan.graph.folds else []
    definitions, checks = _leaf_checks(plan, leaves, reason)
    prologue = batch_prologue(plan.buffers[batch.name], f"input {batch.attrs['ref']}") if batch else ""
    if device == "cuda":
        includes, key = "#include <torch/csrc/inductor/aoti_torch/c/shim.h>\n#include <cuda_runtime.h>\n", "CUDA"

        def get_stream(first):
            return (
                f"    void* stream = nullptr;\n    aoti_torch_get_current_cuda_stream({first}.get_device(), &stream);\n"
            )
    else:
        includes, key = "", "CPU"

        def get_stream(first):
            return ""

    operators, libraries = [], []

    def operator(name, arguments, returns, body):
        ones, listed = split_arguments(arguments)
        names = [f"Tensor {plan.buffers[n.name]}" for n in ones]
        params, schema = (
            ", ".join(names + ["std::vector<Tensor> ks_listed"] * bool(listed)),
            ", ".join(names + ["Tensor[] ks_listed"] * bool(listed)),
        )
        if listed:  # the tensors past the dispatcher's limit, in one list: named as the kernels read them
            body = (
                f"    if (ks_listed.size() != {len(listed)}) "
                f'throw std::runtime_error("{name}: expected {len(listed)} tensors in its list");\n'
                + "".join(f"    Tensor {plan.buffers[n.name]} = ks_listed[{i}];\n" for i, n in enumerate(listed))
                + body
            )
        operators.append(f"{returns[0]} {name}({params}) {{\n{body}}}\n")
        libraries.append((f'm.def("{name}({schema}) -> {returns[1]}");', f'm.impl("{name}", TORCH_BOX(&{name}));'))

    by_target = {f"buffer:{n.attrs['ref']}": n for n in leaves if n.kind == "buffer"}
    main = [f for f in writer.functions if not f[4].once]
    first = plan.buffers[leaves[0].name]
    if replay:
        allocs, calls = _steps(plan, device, main, first, by_target, "s")
        body = _replayed(plan, leaves, allocs, calls, get_stream(first))
    else:
        allocs, calls = _steps(plan, device, main, first, by_target, "(cudaStream_t)stream")
        body = get_stream(first) + _interleaved(allocs, calls, main, plan)
        body += f"    return {plan.buffers[plan.output.name]};\n"
    operator("fused", leaves, ("Tensor", "Tensor"), prologue + checks + body)
    if plan.graph.folds:
        once = [f for f in writer.functions if f[4].once]
        fold_first = plan.buffers[folded[0].name]
        allocs, calls = _steps(plan, device, once, fold_first, {}, "(cudaStream_t)stream")
        results = [plan.buffers[copy.name] for _, copy in plan.graph.folds]
        _, fold_checks = _leaf_checks(plan, folded, reason)
        returns = (
            ("Tensor", "Tensor")
            if len(results) == 1
            else (f"std::tuple<{', '.join(['Tensor'] * len(results))}>", f"({', '.join(['Tensor'] * len(results))})")
        )
        value = results[0] if len(results) == 1 else f"std::make_tuple({', '.join(results)})"
        body = get_stream(fold_first) + _interleaved(allocs, calls, once, plan) + f"    return {value};\n"
        operator("fold", folded, returns, fold_checks + body)
    replay_support = _replay_support() if replay else ""
    defs = " ".join(d for d, _ in libraries)
    impls = " ".join(i for _, i in libraries)
    return (
        HEADER.format(describe=plan.describe)
        + f"""#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>
{includes}#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

using torch::stable::Tensor;

{BATCH_DECLARATION if batch else ""}{chr(10).join(decls)}
{definitions}{replay_support}
{chr(10).join(operators)}
STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) {{ {defs} }}
STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, {key}, m) {{ {impls} }}
"""
    )


def _interleaved(allocs, calls, functions, plan):
    """Lines allocating each buffer right before the kernel that writes it, then calling that kernel."""
    lines, pending = [], iter(allocs)
    for (_, _, _, _, kernel), call in zip(functions, calls):
        if not kernel.target.startswith("buffer:"):
            lines.append(f"    Tensor {next(pending)}")
        lines.append(f"    {call}")
    return "".join(line + "\n" for line in lines)


# PyTorch's dispatcher takes at most 64 arguments an operator (a ResNet's parameters and buffers are well over a
# hundred): past it an operator takes the inputs one by one and the other tensors in one Tensor[] list.
MAX_OP_ARGS = 64


def split_arguments(arguments):
    """(taken one by one, taken in one list) of an operator's ARGUMENTS: all one by one while they fit."""
    if len(arguments) <= MAX_OP_ARGS:
        return list(arguments), []
    ones = [n for n in arguments if n.kind == "input"][: MAX_OP_ARGS - 1]
    taken = {id(n) for n in ones}
    return ones, [n for n in arguments if id(n) not in taken]


def _python_call_arguments(arguments, params):
    """The Python arguments of an operator of ARGUMENTS, as split_arguments splits them."""
    ones, listed = split_arguments(arguments)
    values = [_python_argument(n, params) for n in ones]
    if listed:
        values.append("[" + ", ".join(_python_argument(n, params) for n in listed) + "]")
    return ", ".join(values)


def _python_argument(n, params):
    if n.kind == "input":
        return f"inputs[{n.attrs['ref']}].contiguous()"
    if n.kind == "param":
        return f"self._ks_params[{params.index(n.attrs['ref'])}]"
    if n.kind == "folded":
        return f"folded[{n.attrs['ref']}]"
    return f"self.get_buffer({n.attrs['ref']!r})"


# model_new.py's method computing the folded values (rewrite.fold_parameters) when the tensors they read change.
FOLD_METHOD = """
    # Values that depend only on parameters and buffers, computed by ops.fold once per version of the tensors they
    # read (load_state_dict and other in-place updates bump a tensor's version; .to() gives it another pointer).
    _ks_fold_key = None

    def _ks_folded(self):
        sources = [{sources}]
        key = [(t.data_ptr(), t._version) for t in sources]
        if key != self._ks_fold_key:
            self._ks_fold_values = {call}
            self._ks_fold_key = key
        return self._ks_fold_values
"""


def model_new(plan, leaves, problem_source, device):
    from agent.heuristic.codegen import CUDNN_PRELOAD

    folded = _arguments(plan, once=True) if plan.graph.folds else []
    params = list(dict.fromkeys(n.attrs["ref"] for n in leaves + folded if n.kind == "param"))
    args = _python_call_arguments(leaves, params)
    checks = scalar_checks(plan.scalars)
    methods = ""
    if folded:
        sources = ", ".join(_python_argument(n, params) for n in folded)
        ones = len(split_arguments(folded)[0])
        spread = "*sources" if ones == len(folded) else f"*sources[:{ones}], sources[{ones}:]"
        call = f"ops.fold({spread})" if len(plan.graph.folds) > 1 else f"(ops.fold({spread}),)"
        methods = FOLD_METHOD.format(sources=sources, call=call)
        checks += "        folded = self._ks_folded()\n"
    preload = CUDNN_PRELOAD if device == "cuda" and any(k.kind == "conv" for k in plan.kernels) else ""
    return model_new_source(plan.describe, preload, problem_source, params, checks, args, methods)


# Whole-forward CUDA-graph replay (ks_replay.h). A kernel launch costs the host a few microseconds, in which an H100
# moves about ten megabytes: a plan of several kernels that each move less than about a million elements is bound by
# its launches, and replays them as one graph (plus a copy of its inputs in and of its output out).
REPLAY_MIN_KERNELS = 4
REPLAY_WORK_PER_KERNEL = 1 << 20
# What a multiply-add costs against an element moved: an H100 does about 30 T FP32 multiply-adds a second against
# about 0.8 T four-byte elements moved.
FMA_PER_ELEMENT = 32


def kernel_work(plan, function):
    """Elements a kernel function of PLAN's writer moves, plus its multiply-adds / FMA_PER_ELEMENT."""
    _, reads, _, _, kernel = function
    numel = {plan.buffers[n.name]: n.numel for n in plan.graph.nodes if n.name in plan.buffers}
    numel.update({plan.buffers[k.node.name]: k.node.numel for k in plan.kernels if k.node.name in plan.buffers})
    node = kernel.node
    work = node.numel + sum(numel.get(p, 0) for p in reads)
    if node.kind == "gemm":
        work += math.prod(node.shape) * node.args[0].shape[-1] // FMA_PER_ELEMENT
    elif node.kind == "conv":
        x, w = node.args
        work += max(node.numel, x.numel) * math.prod(w.shape[1:]) // FMA_PER_ELEMENT
    elif node.kind == "attention":
        q, k = node.args[:2]
        work += math.prod(q.shape[:-1]) * k.shape[-2] * (q.shape[-1] + node.shape[-1]) // FMA_PER_ELEMENT
    return work


def replays(plan, device, leaves):
    """Whether PLAN's forward replays as one CUDA graph: on CUDA, with at least REPLAY_MIN_KERNELS kernels a call whose
    work, with the copies of the inputs and the output, stays under REPLAY_WORK_PER_KERNEL elements a kernel."""
    if device != "cuda":
        return False
    functions = [f for f in plan.writer.functions if not f[4].once]
    if len(functions) < REPLAY_MIN_KERNELS:
        return False
    copies = sum(n.numel for n in leaves if n.kind == "input") + plan.output.numel
    work = sum(kernel_work(plan, f) for f in functions) + copies
    return work <= REPLAY_WORK_PER_KERNEL * len(functions)


REPLAY_DECISION = "graph replay"  # the key of the decision in the Writer's decisions (kept at other batch sizes)


def workspace_files(plan, device, problem_source, block=256, inputs=(), reason=None, decisions=None):
    """The files of PLAN at its own shapes; the binding reads the batch size from the first of the model's INPUTS
    it takes (none: it keeps the problem's shapes, for REASON). DECISIONS: the Writer's, of another batch size."""
    writer = Writer(plan, device, decisions)
    plan.writer = writer
    source = writer.write()
    if device == "cuda":
        source = source.replace("#define BLOCK 256\n", f"#define BLOCK {block}\n", 1)
    leaves = _arguments(plan)
    batch = next((n for n in leaves if n.kind == "input" and n.attrs["ref"] in inputs), None)
    if inputs and batch is None:
        raise Specialized("no input that scales with the batch reaches the kernels")
    name = "kernels/fused.cu" if device == "cuda" else "kernels/fused.cpp"
    replay = (decisions or {}).get(REPLAY_DECISION)
    writer.decisions[REPLAY_DECISION] = replays(plan, device, leaves) if replay is None else replay
    files = {
        name: HEADER.format(describe=plan.describe) + source,
        "binding.cpp": binding(plan, device, leaves, batch, reason, writer.decisions[REPLAY_DECISION]),
        "model_new.py": model_new(plan, leaves, problem_source, device),
    }
    for header in writer.headers:
        files[f"kernels/{header}"] = (
            prelude_headers()[header]
            if header in prelude_headers()
            else attention.template_text(header)
            if header.startswith(("ks_attention", "ks_rnn", "ks_erfinv", "ks_scatter", "ks_sort"))
            else template(header)
        )
    return files
