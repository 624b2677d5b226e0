"""The sort family (torch.sort, argsort): its lowering and its kernels.

A sort node holds a row's int64 positions in sorted order (ks_sort.h's: by value, NaN as the largest, then by position,
as torch's stable sort); the sorted values are a gather of the operand at them, computed where they are read. In C++
a thread sorts a row at a time (ks_sort.h's KsRowSorter: a stable radix sort of the values' bits). On CUDA a block
sorts a row in shared memory with a bitonic network; a row too long for a block's shared memory is sorted in chunks
that fit, which merge passes then combine (each element's place in the merged pair of runs found by a binary search of
the other run), through a scratch copy of the positions that the node carries as its dim 0 (the positions are its
first half).
"""

import math

from agent.heuristic.dag.cexpr import Scope

# The shared memory a CUDA block may take without opting in to more, on every device since compute capability 2.0.
SHARED_BYTES = 48 * 1024
ITEM_BYTES = {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}


def block_row(dtype):
    """The longest row (a power of two) a CUDA block sorts in shared memory: its values and int32 positions."""
    return 1 << int(math.log2(SHARED_BYTES // (ITEM_BYTES[dtype] + 4)))


def lower(lowering, node, x, dim, descending):
    """(values, indices) of torch.sort(x, dim, descending)."""
    if not x.shape:
        return x, lowering.scalar(0, "int64")  # a number sorted is itself, at position 0
    dim %= len(x.shape)
    scratch = x.shape[dim] > block_row(x.dtype)
    order = lowering.add(
        "sort",
        [2] * scratch + list(x.shape),
        "int64",
        [x],
        dim=dim,
        descending=bool(descending),
        scratch=scratch,
    )
    indices = lowering.view(order, ("select", "int"), 0, 0) if scratch else order
    values = lowering.add("gather", list(x.shape), x.dtype, [x, indices], dim=dim, mode="gather")
    return values, indices


def _key(emitter, x, index):
    """Lines computing x's element INDEX, and the name of its value."""
    scope = Scope()
    value = emitter.value(scope, x, index)
    return scope.lines, value


def source(node, emitter, device, pointers, params):
    """(function name, buffers read, C source, headers) of the kernels writing sort NODE."""
    x = node.args[0]
    dim, descending = node.attrs["dim"], "true" if node.attrs["descending"] else "false"
    n, inner = x.shape[dim], math.prod(x.shape[dim + 1 :])
    lines = x.numel // max(n, 1)
    emitter.computing = node.name
    name, t = f"k_{node.name}", x.ctype
    load, value = _key(emitter, x, "i")
    reads = pointers("\n".join(load), "")
    if device == "cpu":
        text = f"""#include "ks_sort.h"
#include <vector>
void {name}({params(reads, "int64_t")}) {{
    #pragma omp parallel if({x.numel}LL >= 16384LL)
    {{
        std::vector<{t}> keys({n});
        std::vector<int64_t> order({n});
        KsRowSorter<{t}> sorter;
        #pragma omp for schedule(static)
        for (int64_t o = 0; o < {lines}LL; ++o) {{
            const int64_t outer = o / {inner}LL, in = o % {inner}LL;
            for (int64_t c = 0; c < {n}LL; ++c) {{
                const int64_t i = (outer * {n}LL + c) * {inner}LL + in;
{_indent(load, 16)}                keys[c] = ({t})({value});
            }}
            sorter.sort<{descending}>(keys.data(), {n}LL, order.data());
            for (int64_t c = 0; c < {n}LL; ++c) out[(outer * {n}LL + c) * {inner}LL + in] = order[c];
        }}
    }}
}}
"""
        return name, reads, text, ["ks_sort.h"]
    return name, reads, _cuda(node, emitter, params, reads, load, value), ["ks_sort.h", "ks_sort.cuh"]


def _cuda(node, emitter, params, reads, load, value):
    """The CUDA kernels: a block sorts a chunk of a row, as wide as the row (rounded up to a power of two) up to
    block_row; a row of several chunks has them merged. The sizes are computed in C from the row's length, so that the
    source differs only in numbers across batch sizes (batch.py), the sorted dim the batch's too."""
    x = node.args[0]
    dim, descending = node.attrs["dim"], "true" if node.attrs["descending"] else "false"
    n, inner = x.shape[dim], math.prod(x.shape[dim + 1 :])
    lines, total = x.numel // max(n, 1), x.numel
    t, g, shared = x.ctype, f"g_{node.name}", f"ks_shared_{node.name}"
    args = "".join(r + ", " for r in reads) + "out"
    text = f"""#include "ks_sort.cuh"
// HALF: where a row of several chunks writes them sorted (the half of the buffer the first merge pass reads)
__global__ void {g}({params(reads, "int64_t")}, int width, int64_t chunks, int64_t half) {{
    extern __shared__ __align__(16) unsigned char {shared}[];
    {t}* keys = reinterpret_cast<{t}*>({shared});
    int* order = reinterpret_cast<int*>({shared} + (width * sizeof({t}) + 7) / 8 * 8);
    for (int64_t b = blockIdx.x; b < {lines}LL * chunks; b += gridDim.x) {{
        const int64_t o = b / chunks, start = (b % chunks) * width;
        const int64_t outer = o / {inner}LL, in = o % {inner}LL;
        const int count = (int)({n}LL - start < width ? {n}LL - start : width);
        for (int c = threadIdx.x; c < width; c += BLOCK) {{
            if (c < count) {{
                const int64_t i = (outer * {n}LL + start + c) * {inner}LL + in;
{_indent(load, 16)}                keys[c] = ({t})({value});
            }}
            order[c] = c;
        }}
        __syncthreads();
        ks_bitonic_sort<{descending}>(keys, order, width, count);
        for (int c = threadIdx.x; c < count; c += BLOCK) {{
            if (chunks == 1) out[(outer * {n}LL + c) * {inner}LL + in] = order[c];
            else out[half * {total}LL + o * {n}LL + start + c] = start + order[c];
        }}
        __syncthreads();
    }}
}}
"""
    launch = f"""    int width = 1;
    while (width < {n}LL && width < {block_row(x.dtype)}) width <<= 1;
    const int64_t chunks = ({n}LL + width - 1) / width, wanted = {lines}LL * chunks;
    int passes = 0;  // each merges pairs of runs: the runs double until one holds the row
    for (int64_t run = width; run < {n}LL; run <<= 1) ++passes;
    const int blocks = (int)(wanted < ks_grid_limit() ? wanted : ks_grid_limit());
    const size_t shared = (width * sizeof({t}) + 7) / 8 * 8 + width * sizeof(int);
    if (blocks > 0) {g}<<<blocks, BLOCK, shared, stream>>>({args}, width, chunks, passes % 2);
"""
    if not node.attrs["scratch"]:  # planned without the merge passes' scratch: a batch size can make the rows longer
        launch = (
            f"    if ({n}LL > {block_row(x.dtype)}LL)\n"
            f'        throw std::runtime_error("sort: rows of " + std::to_string((long long)({n}LL)) + '
            f'" elements, longer than the {block_row(x.dtype)} the kernels were planned for (at another batch size)");\n'
            + launch
        )
    else:  # the passes alternate halves, the last reads half 1 and writes the result in half 0
        text += _merge(node, emitter, params, reads, t, descending, n, inner, total)
        launch += (
            f"    const int64_t elements = ({total}LL + BLOCK - 1) / BLOCK;\n"
            f"    const int merging = (int)(elements < ks_grid_limit() ? elements : ks_grid_limit());\n"
            f"    for (int p = 1; p <= passes; ++p)\n"
            f"        {g}_merge<<<merging, BLOCK, 0, stream>>>({args}, (int64_t)width << (p - 1), "
            f"(passes - p + 1) % 2, p == passes);\n"
        )
    return text + f"void k_{node.name}({params(reads, 'int64_t', '')}, cudaStream_t stream) {{\n{launch}}}\n"


def _merge(node, emitter, params, reads, t, descending, n, inner, total):
    """The CUDA kernel of one merge pass: runs of WIDTH sorted positions (in half FROM of the buffer, a row's contiguous)
    merged in pairs into the other half, or, on the LAST pass, into half 0 in the operand's own layout."""
    load, value = _key(emitter, node.args[0], "i")
    return f"""__global__ void g_{node.name}_merge({params(reads, "int64_t", "")}, int64_t width, int from, int last) {{
    for (int64_t q = blockIdx.x * (int64_t)BLOCK + threadIdx.x; q < {total}LL; q += (int64_t)gridDim.x * BLOCK) {{
        const int64_t o = q / {n}LL, c = q % {n}LL;
        const int64_t outer = o / {inner}LL, in = o % {inner}LL;
        const int64_t* row = out + from * {total}LL + o * {n}LL;
        auto key = [&](int64_t r) -> {t} {{
            const int64_t i = (outer * {n}LL + r) * {inner}LL + in;
{_indent(load, 12)}            return ({t})({value});
        }};
        const int64_t mine = row[c];
        const {t} mine_key = key(mine);
        // the other run of the pair: its elements before this one, by a binary search (the order is total)
        const int64_t run = c / width, base = (run >> 1) * 2 * width, own = (run & 1) ? base + width : base;
        int64_t lo = (run & 1) ? base : base + width, hi = (run & 1) ? base + width : base + 2 * width;
        lo = lo < {n}LL ? lo : {n}LL;
        hi = hi < {n}LL ? hi : {n}LL;
        const int64_t first = lo;
        while (lo < hi) {{
            const int64_t mid = lo + (hi - lo) / 2, other = row[mid];
            if (ks_sort_before<{descending}>(key(other), other, mine_key, mine)) lo = mid + 1;
            else hi = mid;
        }}
        const int64_t at = base + (c - own) + (lo - first);
        if (last) out[(outer * {n}LL + at) * {inner}LL + in] = mine;
        else out[(1 - from) * {total}LL + o * {n}LL + at] = mine;
    }}
}}
"""


def _indent(lines, depth):
    return "".join(" " * depth + line + "\n" for line in lines)
