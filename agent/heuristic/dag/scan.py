"""The scan family (cumsum, cumprod, logcumsumexp, cummax, cummin), its source computed as it is read: one thread per
line along the scanned dim, the running value written at every step; on CUDA a line of the last dim at least
BLOCK_SCAN long is scanned by a block (tiles of 4 x BLOCK read and written coalesced through shared memory, each
thread's four in order, then the threads' totals by warp shuffles, the tiles chained by a carry)."""

import math

from agent.heuristic.dag.cexpr import Scope

BLOCK_SCAN = 256  # the shortest line of the last dim a CUDA block scans (shorter ones: a thread per line)
ITEMS = 4  # elements per thread of a block scan's tile


def _step(op, acc, v, ctype):
    if op == "sum":
        return f"{acc} += ({ctype}){v};"
    if op == "prod":
        return f"{acc} *= ({ctype}){v};"
    if op == "max":
        return f"{acc} = {v} > {acc} ? {v} : {acc};"
    if op == "min":
        return f"{acc} = {v} < {acc} ? {v} : {acc};"
    # logsumexp, stable: the larger of the two factored out
    return (
        f"{{ const {ctype} hi = {acc} > {v} ? {acc} : {v}, lo = {acc} > {v} ? {v} : {acc}; "
        f"{acc} = hi == -INFINITY ? hi : hi + log1pf(expf(lo - hi)); }}"
    )


def source(node, emitter, device, pointers, params):
    """(function name, buffers read, C source) of the kernel writing scan NODE."""
    dim = node.attrs["dim"]
    length = node.shape[dim] if node.shape else 1
    inner = math.prod(node.shape[dim + 1 :])
    lines = math.prod(node.shape) // max(length, 1)
    op = node.attrs["op"]
    # float32 sums and products run in double: a product's prefixes leave float's range in a block scan's partial
    # products (a tile's product of 1,024 values) though the line's own prefixes stay inside it
    ctype = "double" if node.dtype == "float32" and op in ("sum", "prod") else node.ctype
    init = {"sum": "0", "prod": "1", "max": "(-INFINITY)", "min": "INFINITY", "logsumexp": "(-INFINITY)"}[op]
    if node.dtype not in ("float32", "float64") and op in ("max", "min"):
        init = "(-9223372036854775807LL - 1)" if op == "max" else "9223372036854775807LL"
    emitter.computing = node.name
    if device == "cuda" and inner == 1 and length >= BLOCK_SCAN:
        return _block_scan(node, emitter, pointers, params, op, ctype, init, length, lines)
    scope = Scope()
    scope.lines.append(f"const int64_t o = t / {inner}LL, in = t % {inner}LL;")
    scope.lines.append(f"{ctype} acc = {init};")
    body = Scope(scope)
    body.lines.append(f"const int64_t i = (o * {length}LL + c) * {inner}LL + in;")
    v = emitter.value(body, node.args[0], "i")
    body.lines.append(_step(op, "acc", v, ctype))
    body.lines.append(f"out[i] = ({node.ctype})acc;")
    loop = [f"for (int64_t c = 0; c < {length}LL; ++c) {{"] + ["    " + line for line in body.lines] + ["}"]
    text = "\n".join(scope.lines + loop)
    reads = pointers(text, "")
    name = f"k_{node.name}"
    indented = "".join("        " + line + "\n" for line in scope.lines + loop)
    if device == "cpu":
        return (
            name,
            reads,
            (
                f"void {name}({params(reads, node.ctype)}) {{\n"
                f"    #pragma omp parallel for schedule(static) if({lines * length}LL >= 65536LL)\n"
                f"    for (int64_t t = 0; t < {lines}LL; ++t) {{\n{indented}    }}\n}}\n"
            ),
        )
    return (
        name,
        reads,
        (
            f"__global__ void g_{node.name}({params(reads, node.ctype)}) {{\n"
            f"    for (int64_t t = blockIdx.x * (int64_t)BLOCK + threadIdx.x; t < {lines}LL; "
            f"t += (int64_t)gridDim.x * BLOCK) {{\n{indented}    }}\n}}\n"
            f"void {name}({params(reads, node.ctype, '')}, cudaStream_t stream) {{\n"
            f"    const int64_t wanted = ({lines}LL + BLOCK - 1) / BLOCK;\n"
            f"    const int blocks = (int)(wanted < ks_grid_limit() ? wanted : ks_grid_limit());\n"
            f"    g_{node.name}<<<blocks, BLOCK, 0, stream>>>({''.join(r + ', ' for r in reads)}out);\n}}\n"
        ),
    )


def _block_scan(node, emitter, pointers, params, op, ctype, init, length, lines):
    """(function name, buffers read, CUDA source) of a block per line of the last dim (see the module's doc)."""
    name = f"k_{node.name}"
    load = Scope()
    v = emitter.value(load, node.args[0], "i")
    load.lines.append(f"x = ({ctype})({v});")
    loads = "".join("                    " + line + "\n" for line in load.lines)
    reads = pointers("\n".join(load.lines), "")
    combine = f"ks_scan_{node.name}"
    source = f"""__device__ __forceinline__ {ctype} {combine}({ctype} acc, {ctype} v) {{
    {_step(op, "acc", "v", ctype)}
    return acc;
}}
__global__ void g_{node.name}({params(reads, node.ctype)}) {{
    __shared__ {ctype} tile[BLOCK * {ITEMS}];
    __shared__ {ctype} totals[BLOCK / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int64_t o = blockIdx.x; o < {lines}LL; o += gridDim.x) {{
        {ctype} carry = {init};
        for (int64_t base = 0; base < {length}LL; base += (int64_t)BLOCK * {ITEMS}) {{
            for (int k = 0; k < {ITEMS}; ++k) {{
                const int64_t c = base + k * BLOCK + threadIdx.x;
                {ctype} x = {init};
                if (c < {length}LL) {{
                    const int64_t i = o * {length}LL + c;
{loads}                }}
                tile[k * BLOCK + threadIdx.x] = x;
            }}
            __syncthreads();
            {ctype} run = {init};
            for (int k = 0; k < {ITEMS}; ++k) {{
                run = {combine}(run, tile[threadIdx.x * {ITEMS} + k]);
                tile[threadIdx.x * {ITEMS} + k] = run;
            }}
            {ctype} x = run;  // the inclusive scan of the threads' totals, in the warp
            for (int d = 1; d < 32; d <<= 1) {{
                const {ctype} y = __shfl_up_sync(0xffffffffu, x, d);
                if (lane >= d) x = {combine}(y, x);
            }}
            {ctype} before = __shfl_up_sync(0xffffffffu, x, 1);
            if (lane == 0) before = {init};
            if (lane == 31) totals[warp] = x;
            __syncthreads();
            if (warp == 0) {{
                {ctype} w = lane < BLOCK / 32 ? totals[lane] : {init};
                for (int d = 1; d < 32; d <<= 1) {{
                    const {ctype} y = __shfl_up_sync(0xffffffffu, w, d);
                    if (lane >= d) w = {combine}(y, w);
                }}
                if (lane < BLOCK / 32) totals[lane] = w;
            }}
            __syncthreads();
            const {ctype} prefix = {combine}(carry, warp > 0 ? {combine}(totals[warp - 1], before) : before);
            for (int k = 0; k < {ITEMS}; ++k)
                tile[threadIdx.x * {ITEMS} + k] = {combine}(prefix, tile[threadIdx.x * {ITEMS} + k]);
            carry = {combine}(carry, totals[BLOCK / 32 - 1]);
            __syncthreads();
            for (int k = 0; k < {ITEMS}; ++k) {{
                const int64_t c = base + k * BLOCK + threadIdx.x;
                if (c < {length}LL) out[o * {length}LL + c] = ({node.ctype})tile[k * BLOCK + threadIdx.x];
            }}
            __syncthreads();
        }}
    }}
}}
void {name}({params(reads, node.ctype, "")}, cudaStream_t stream) {{
    const int blocks = (int)({lines}LL < ks_grid_limit() ? {lines}LL : ks_grid_limit());
    g_{node.name}<<<blocks, BLOCK, 0, stream>>>({"".join(r + ", " for r in reads)}out);
}}
"""
    return name, reads, source
