"""The scan family (cumsum, cumprod, logcumsumexp, cummax, cummin): one thread per line along the scanned dim,
its source computed as it is read, the running value written at every step."""

import math

from agent.heuristic.dag.cexpr import Scope


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
    ctype = "double" if device == "cpu" and node.dtype == "float32" and op in ("sum", "prod") else node.ctype
    init = {"sum": "0", "prod": "1", "max": "(-INFINITY)", "min": "INFINITY", "logsumexp": "(-INFINITY)"}[op]
    if node.dtype not in ("float32", "float64") and op in ("max", "min"):
        init = "(-9223372036854775807LL - 1)" if op == "max" else "9223372036854775807LL"
    emitter.computing = node.name
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
