"""The RNN family: nn.LSTM, nn.GRU and nn.RNN (captured whole as aten.lstm / gru / rnn_tanh / rnn_relu) as, per layer
and direction, one GEMM projecting every step's input (x W_ih^T, a gemm node of the graph), then one kernel that runs
the steps: per step one GEMM h_{t-1} W_hh^T and one fused cell (biases, gates, cell update, h_t written in place).

The step kernel is ks_rnn.h (C++) or ks_rnn.cuh (CUDA), with the cell's arithmetic in ks_rnn_cell.h, beside this
module. Its node (kind "rnn") is the direction's state buffer, [rows, batch, hidden]: h_t by time (the layer's output,
rows 0 .. steps - 1), h0, the cell c (LSTM), then the step's recurrent projection. Outputs, h_n and c_n are views of
it; h0 and c0 are computed into it by the kernel, so any expression of them (zeros, a slice of an input) serves.
"""

import contextlib
import functools

import torch

from agent.heuristic.dag.cexpr import Scope
from agent.heuristic.errors import Unsupported

MODES = {"lstm": 0, "gru": 1, "rnn_tanh": 2, "rnn_relu": 3}
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
HEADERS = {"cpu": ("ks_rnn.h", "ks_rnn_cell.h", "ks_blas.h", "ks_gemm.h"), "cuda": ("ks_rnn.cuh", "ks_rnn_cell.h")}
# The CPU kernel's OpenMP thresholds: a step's GEMM in multiply-adds (ks_gemm's own), its cells in elements.
PARALLEL_GEMM = 1 << 22
PARALLEL_CELLS = 1 << 14


def rows(mode, steps):
    """Rows of [batch, hidden] in a direction's state buffer: h_t by time, h0, c (LSTM), the recurrent projection."""
    return steps + 1 + (mode == "lstm") + GATES[mode]


# -- capture ---------------------------------------------------------------------------------------------------------
# The aten ops have no shape function: on meta and fake tensors they run their decomposition, every step of every layer
# (KernelBench's 6 layers of 512 steps: minutes, past the analysis' time). While capturing, nn.LSTM / GRU / RNN call
# custom ops of the same schemas instead (torch._VF, which they call, routed): shapes only on meta and fake tensors,
# the aten op itself on real ones. capture.py names them back as the aten ops in the graph it writes.
CAPTURE_NAMESPACE = "ks_capture"


def _fake(mode):
    def shapes(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
        states = list(hx) if mode == "lstm" else [hx]
        out = [*input.shape[:2], (2 if bidirectional else 1) * states[0].shape[-1]]
        return (input.new_empty(out), *(s.new_empty(s.shape) for s in states))

    return shapes


@functools.cache
def _capture_ops():
    ops = {}
    for mode in MODES:
        aten = getattr(torch.ops.aten, mode).input
        schema = str(aten._schema)
        op = torch.library.custom_op(
            f"{CAPTURE_NAMESPACE}::{mode}",
            lambda *args, aten=aten: tuple(aten(*args)),
            mutates_args=(),
            schema=schema[schema.index("(") :],
        )
        op.register_fake(_fake(mode))
        ops[mode] = op
    return ops


def aten_target(target):
    """The aten op a captured target stands for: ks_capture.lstm.default -> aten.lstm.input; others unchanged."""
    namespace, _, rest = target.partition(".")
    mode = rest.removesuffix(".default")
    return f"aten.{mode}.input" if namespace == CAPTURE_NAMESPACE and mode in MODES else target


@contextlib.contextmanager
def capturing():
    """While it lasts, nn.LSTM / GRU / RNN run as the capture ops (a packed sequence's form stays aten's)."""
    ops = _capture_ops()
    vf = torch._VF
    saved = {mode: vf.__dict__.get(mode) for mode in MODES}

    def route(mode):
        original = getattr(torch._C._VariableFunctions, mode)

        def call(*args):
            packed = isinstance(args[3], (list, tuple))  # (data, batch_sizes, hx, params, ...)
            return original(*args) if packed else ops[mode](*args)

        return call

    for mode in MODES:
        setattr(vf, mode, route(mode))
    try:
        yield
    finally:
        for mode, value in saved.items():
            if value is None:
                vf.__dict__.pop(mode, None)
            else:
                setattr(vf, mode, value)


# -- lowering ----------------------------------------------------------------------------------------------------------
def lower(lowering, node, mode, overload):
    """The nodes of aten.MODE.OVERLOAD (node of capture.py's JSON): (output, h_n) or, for an LSTM, (output, h_n, c_n)."""
    if overload != "input":
        raise Unsupported(f"aten.{mode}.{overload}: a packed sequence (pack_padded_sequence) has data-dependent steps")
    args = node["args"]
    x = lowering.arg(args[0])
    initial = [lowering.arg(h) for h in (args[1] if mode == "lstm" else [args[1]])]
    params = [lowering.arg(p) for p in args[2]]
    has_biases, layers, dropout, train, bidirectional, batch_first = args[3:9]
    if dropout and train and layers > 1:
        raise Unsupported(f"nn.{_module(mode)} with dropout={dropout} in training mode (random between its layers)")
    directions = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    if len(params) != per * layers * directions:
        raise Unsupported(f"nn.{_module(mode)} with proj_size (a projection of h): the RNN family has no kernel for it")
    if any(t.dtype != "float32" for t in [x, *initial, *params]):
        raise Unsupported(f"nn.{_module(mode)} of {x.dtype}: the RNN family writes float32 kernels")
    if len(x.shape) != 3:
        raise Unsupported(f"aten.{mode} of an input of rank {len(x.shape)}")
    steps, batch = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
    hidden = initial[0].shape[-1]
    gates = GATES[mode]
    layer_in = x
    # Rows of the input projection between steps and between batch entries: layer 0 projects x in its own order
    # (batch-major when batch_first, without a transposed copy), later layers the time-major output before them.
    x_time, x_batch = (1, steps) if batch_first else (batch, 1)
    h_n, c_n = [], []
    for layer in range(layers):
        flat = lowering.view(layer_in, ("reshape", "default"), [steps * batch, layer_in.shape[-1]])
        sequences = []
        for direction in range(directions):
            at = layer * directions + direction
            w_ih, w_hh, *biases = params[per * at : per * (at + 1)]
            projection = lowering.add(
                "gemm", [steps * batch, gates * hidden], "float32", [flat, lowering.view(w_ih, ("t", "default"))]
            )
            starts = [lowering.view(h, ("select", "int"), 0, at) for h in initial]
            state = lowering.add(
                "rnn",
                [rows(mode, steps), batch, hidden],
                "float32",
                [projection, w_hh, *biases, *starts],
                mode=mode,
                steps=steps,
                batch=batch,
                hidden=hidden,
                x_time=x_time,
                x_batch=x_batch,
                reverse=direction == 1,
                bias=bool(has_biases),
            )
            sequences.append(lowering.view(state, ("slice", "Tensor"), 0, 0, steps))
            h_n.append(lowering.view(state, ("select", "int"), 0, 0 if direction else steps - 1))
            if mode == "lstm":
                c_n.append(lowering.view(state, ("select", "int"), 0, steps + 1))
        layer_in = (
            sequences[0]
            if directions == 1
            else lowering.add("cat", [steps, batch, 2 * hidden], "float32", sequences, dim=2, sizes=[hidden, hidden])
        )
        x_time, x_batch = batch, 1
    output = lowering.view(layer_in, ("transpose", "int"), 0, 1) if batch_first else layer_in
    results = (output, _stack(lowering, h_n)) + ((_stack(lowering, c_n),) if mode == "lstm" else ())
    for got, (shape, _) in zip(results, node["outs"]):
        if list(got.shape) != list(shape):
            raise Unsupported(f"aten.{mode} ({node['name']}): lowered to {got.shape}, captured as {shape}")
    return results


def _module(mode):
    return {"lstm": "LSTM", "gru": "GRU"}.get(mode, "RNN")


def _stack(lowering, states):
    """[layers * directions, batch, hidden] of the final states, in PyTorch's order (layer-major, forward first)."""
    parts = [lowering.view(s, ("unsqueeze", "default"), 0) for s in states]
    if len(parts) == 1:
        return parts[0]
    return lowering.add("cat", [len(parts), *states[0].shape], "float32", parts, dim=0, sizes=[1] * len(parts))


# -- scheduling ----------------------------------------------------------------------------------------------------
def operands(node):
    """The nodes the step kernel reads from memory: projection, W_hh, then b_ih and b_hh when it has biases."""
    count = 4 if node.attrs["bias"] else 2
    return node.args[:count]


def starts(node):
    """h0 (and c0): computed into the state buffer by the kernel itself, wherever they come from."""
    return node.args[4 if node.attrs["bias"] else 2 :]


def layout(scheduler, node):
    return {"operands": [scheduler.contiguous_operand(a) for a in operands(node)]}


# -- code ------------------------------------------------------------------------------------------------------------
def source(writer, kernel):
    """(function name, buffers read, C source, headers) of the kernel writing rnn node KERNEL.node."""
    node = kernel.node
    a = node.attrs
    mode, steps, batch, hidden = a["mode"], a["steps"], a["batch"], a["hidden"]
    row = batch * hidden
    names = [writer.plan.buffers[n.name] for n in kernel.layout["operands"]]
    projection, w_hh = names[:2]
    b_ih, b_hh = names[2:] if a["bias"] else ("nullptr", "nullptr")
    emitter = writer.emitter
    emitter.computing = node.name
    scope = Scope()
    for offset, start in zip((steps, steps + 1), starts(node)):
        value = emitter.value(scope, start, "i")
        scope.lines.append(f"out[{offset * row}LL + i] = (float)({value});")
    initial = writer.pointers("\n".join(scope.lines), "")
    body = "".join(f"        {line}\n" for line in scope.lines)
    config = (
        f"    const KsRnn r{{{steps}LL, {batch}LL, {hidden}LL, {a['x_time']}LL, {a['x_batch']}LL, "
        f"{str(a['reverse']).lower()}}};\n"
    )
    call = f"ks_rnn<{MODES[mode]}>(r, {projection}, {w_hh}, {b_ih}, {b_hh}, out"
    name = f"k_{node.name}"
    reads = list(dict.fromkeys(n for n in names + initial))
    if writer.device == "cpu":
        gemm_work = batch * GATES[mode] * hidden * hidden
        text = (
            f'#include "ks_rnn.h"\n'
            f"void {name}({writer.params(reads, 'float')}) {{\n"
            f"    // h0{' and c0' if mode == 'lstm' else ''} into the state, then the {steps} steps\n"
            f"    for (int64_t i = 0; i < {row}LL; ++i) {{\n{body}    }}\n"
            f"{config}"
            f"    {call}, {gemm_work}LL >= {PARALLEL_GEMM}LL, {row}LL >= {PARALLEL_CELLS}LL);\n}}\n"
        )
        return name, reads, text, HEADERS["cpu"]
    text = (
        f'#include "ks_rnn.cuh"\n'
        f"__global__ void g_{node.name}({writer.params(initial, 'float')}) {{\n"
        f"    for (int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x; i < {row}LL; "
        f"i += (int64_t)gridDim.x * BLOCK) {{\n{body}    }}\n}}\n"
        f"void {name}({writer.params(reads, 'float', '')}, cudaStream_t stream) {{\n"
        f"    const int64_t wanted = ({row}LL + BLOCK - 1) / BLOCK;\n"
        f"    const int blocks = (int)(wanted < ks_grid_limit() ? wanted : ks_grid_limit());\n"
        f"    g_{node.name}<<<blocks, BLOCK, 0, stream>>>({''.join(r + ', ' for r in initial)}out);\n"
        f"{config}"
        f"    {call}, ks_cublas(), stream);\n}}\n"
    )
    return name, reads, text, HEADERS["cuda"]
