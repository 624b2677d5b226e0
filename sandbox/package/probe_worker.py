"""Jailed worker of the packaging probe: runs ModelNew on the problem's inputs and at other batch sizes while
recording its operators' arguments and results, calls each operator again with one size grown at a time, then
checks the fakes inferred from those records with torch.library.opcheck.

`python -m sandbox.package.probe_worker R W`, started in a jail by sandbox.package.probe.
"""

import math
import sys
import types
import typing
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from sandbox.native import inline
from sandbox.problem import batch_candidates, import_file, make_inputs, make_model, variant_inputs
from sandbox.protocol import Channel
from sandbox.workers.common import error_text, is_cuda_fault, setup_device, synchronize

_BUILTIN = {"aten", "prim", "prims", "_c10d_functional", "quantized", "profiler"}
GROWTHS = (1, 2)  # each size grown by these: consecutive points pin down the floor division of pools and strides
MAX_SIZES = 8  # sizes grown per operator, smallest first


def describe(value):
    """What the shape rules read of one argument or result."""
    if isinstance(value, torch.Tensor):
        return {
            "t": "tensor",
            "shape": list(value.shape),
            "stride": list(value.stride()),
            "offset": value.storage_offset(),
            "dtype": str(value.dtype).removeprefix("torch."),
        }
    if isinstance(value, bool):
        return {"t": "bool", "v": value}
    if isinstance(value, int):
        return {"t": "int", "v": value}
    if isinstance(value, float):
        return {"t": "float", "v": value}
    return {"t": type(value).__name__}


def outputs(result):
    if result is None:
        return []
    return [describe(r) for r in (result if isinstance(result, (tuple, list)) else [result])]


class Recorder(TorchDispatchMode):
    """Every call of the watched operators: dispatcher operators through this mode, pybind11 functions through the
    wrappers `watch_module` puts on their modules."""

    def __init__(self, schema_ops):
        super().__init__()
        self.schema_ops, self.active, self.source = set(schema_ops), False, "problem"
        self.calls, self.first, self.namespace = [], {}, None  # first: name -> First of its first call

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name.split("::", 1)[1] + (
            f".{func._overloadname}" if func._overloadname != "default" else ""
        )
        if func.namespace in _BUILTIN or name not in self.schema_ops:
            return func(*args, **kwargs)
        self.namespace = func.namespace
        arguments = func._schema.arguments
        positional = [
            args[i] if i < len(args) else kwargs.get(a.name, a.default_value) for i, a in enumerate(arguments)
        ]

        def invoke(*values):
            return func(
                *[v for v, a in zip(values, arguments) if not a.kwarg_only],
                **{a.name: v for v, a in zip(values, arguments) if a.kwarg_only},
            )

        return self.call(name, invoke, positional, op=func)

    def call(self, name, function, args, op=None):
        result = function(*args)
        if self.active:
            self.calls.append(
                {"op": name, "source": self.source, "args": [describe(a) for a in args], "outs": outputs(result)}
            )
            if name not in self.first:
                self.first[name] = First(function, [a.clone() if isinstance(a, torch.Tensor) else a for a in args], op)
        return result


@dataclass
class First:
    """An operator's first recorded call: how to call it again, its arguments, its OpOverload if it has one."""

    function: object
    args: list
    op: object = None


def watch_module(module, functions, recorder):
    """Wrap MODULE's pybind11 FUNCTIONS so each call is recorded (a torch.ops namespace is left to the mode)."""
    if not isinstance(module, types.ModuleType):
        return module
    for name in functions:
        original = getattr(module, name, None)
        if callable(original) and not hasattr(original, "_ks_original"):

            def wrapper(*args, _name=name, _original=original):
                return recorder.call(_name, _original, list(args))

            wrapper._ks_original = original
            setattr(module, name, wrapper)
    return module


def install_watchers(functions, recorder):
    """Every extension the solution loads has its functions watched: load_inline, load and load_extension."""
    import torch.utils.cpp_extension as ce

    import sandbox.native as native
    import sandbox.native.build as build

    def watching(load):
        def loader(*args, **kwargs):
            return watch_module(load(*args, **kwargs), functions, recorder)

        return loader

    ce.load_inline, ce.load = watching(ce.load_inline), watching(ce.load)
    native.load_extension = build.load_extension = watching(build.load_extension)


def share_weights(model, reference):
    theirs, mine = reference.state_dict(), model.state_dict()
    model.load_state_dict({k: v for k, v in theirs.items() if k in mine and mine[k].shape == v.shape}, strict=False)


def _flat(value):
    return [value] if isinstance(value, torch.Tensor) else list(value) if isinstance(value, (list, tuple)) else [value]


def matches(actual, expected, atol, rtol):
    actual, expected = _flat(actual), _flat(expected)
    if len(actual) != len(expected):
        return f"{len(actual)} outputs where Model returns {len(expected)}"
    for a, e in zip(actual, expected):
        if not isinstance(a, torch.Tensor) or a.shape != e.shape:
            return f"an output of shape {tuple(getattr(a, 'shape', ()))} where Model's is {tuple(e.shape)}"
        if not torch.allclose(a.float(), e.float(), atol=atol, rtol=rtol, equal_nan=False):
            return "outputs that differ from Model's"
    return ""


def grown(value, size, new):
    """VALUE with every dimension (or integer) equal to SIZE made NEW: the tensor's own values repeated, so indices
    and other values a kernel relies on keep their range."""
    if isinstance(value, torch.Tensor):
        for d, n in enumerate(value.shape):
            if n == size:
                reps = [1] * value.dim()
                reps[d] = math.ceil(new / n)
                value = value.repeat(*reps).narrow(d, 0, new)
        return value.contiguous()
    if isinstance(value, int) and not isinstance(value, bool) and value == size:
        return new
    return value


def sizes_of(args):
    found = set()
    for a in args:
        if isinstance(a, torch.Tensor):
            found |= {n for n in a.shape if n >= 2}
        elif isinstance(a, int) and not isinstance(a, bool) and a >= 2:
            found.add(a)
    return sorted(found)[:MAX_SIZES]


class Probe:
    def __init__(self, channel, start):
        self.channel, self.start = channel, start
        self.device = start["device"]
        self.recorder = Recorder(start["schema_ops"])
        self.notes = []

    def load(self):
        setup_device(self.device)
        self.problem = import_file(self.start["problem"], "ks_problem")
        if inline.wanted(Path(self.start["solution"]).read_bytes()):
            inline.install()
        install_watchers(self.start["functions"], self.recorder)
        solution = import_file(self.start["solution"], "ks_solution")
        seed = self.start["seed"]
        self.model = make_model(solution.ModelNew, self.problem, seed, self.device).eval()
        self.reference = make_model(self.problem.Model, self.problem, seed, self.device).eval()
        share_weights(self.model, self.reference)

    def run_model(self):
        """The recorded calls of ModelNew at the problem's inputs, then at each batch variant Model accepts."""
        seed = self.start["seed"]
        inputs = make_inputs(self.problem, seed, self.device)
        with torch.no_grad(), self.recorder:
            self.recorder.active = True
            self.model(*inputs)
            synchronize(self.device)
        variants = []
        for variant in batch_candidates(inputs)[:4]:
            if variant["inputs"] != batch_candidates(inputs)[0]["inputs"]:
                continue  # only the variants that scale every input sharing the batch
            shaped = variant_inputs(self.problem, variant, seed, self.device)
            label = f"batch {shaped[variant['inputs'][0]].shape[0]}"
            with torch.no_grad():
                try:
                    expected = self.reference(*shaped)
                except Exception:  # noqa: BLE001 -- Model itself does not take this batch: not a variant
                    continue
                before = len(self.recorder.calls)
                self.recorder.source = label
                try:
                    with self.recorder:
                        actual = self.model(*shaped)
                        synchronize(self.device)
                    why = matches(actual, expected, self.start["atol"], self.start["rtol"])
                except Exception as exc:  # noqa: BLE001 -- a kernel welded to the problem's shapes
                    if is_cuda_fault(exc):
                        raise
                    why = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:300]}"
            for call in self.recorder.calls[before:]:
                call["trusted"] = not why
            variants.append({**variant, "label": label, "ok": not why, "why": why})
        for call in self.recorder.calls:
            call.setdefault("trusted", call["source"] == "problem")
        return variants

    def grow(self):
        """Each operator called again with one size of its arguments grown, sending each call before the next."""
        self.recorder.active = False
        for name, first in self.recorder.first.items():
            for size in sizes_of(first.args):
                for step in GROWTHS:
                    new = [grown(a, size, size + step) for a in first.args]
                    self.channel.send("growing", op=name, size=size, new=size + step)
                    try:
                        with torch.no_grad():
                            result = first.function(*new)
                        synchronize(self.device)
                    except Exception as exc:  # noqa: BLE001 -- the kernel refuses this size: nothing learnt
                        if is_cuda_fault(exc):
                            self.channel.send("grown", op=name, call=None, fault=error_text(exc, 1000))
                            return
                        continue
                    self.channel.send(
                        "grown",
                        op=name,
                        call={
                            "op": name,
                            "source": "grown sizes",
                            "trusted": False,
                            "args": [describe(a) for a in new],
                            "outs": outputs(result),
                        },
                    )

    def check(self, sources):
        """opcheck of each operator against its fake, on the arguments of its first recorded call. SOURCES: the
        operator's code as ops.py has it, its pybind11 function reached through the module names ops.py uses."""
        functions = types.SimpleNamespace(**{n: f.function for n, f in self.recorder.first.items() if f.op is None})
        failures = {}
        for name, source in sources.items():
            first = self.recorder.first.get(name)
            if first is None:
                continue
            scope = {"torch": torch, "Optional": typing.Optional, **dict.fromkeys(self.start["modules"], functions)}
            try:
                exec(compile(source, f"<fake of {name}>", "exec"), scope)  # noqa: S102 -- code this package wrote
                values = [a.clone() if isinstance(a, torch.Tensor) else a for a in first.args]
                if first.op is None:
                    torch.library.opcheck(scope[name], tuple(values))
                else:
                    arguments = first.op._schema.arguments
                    torch.library.opcheck(
                        first.op,
                        tuple(v for v, a in zip(values, arguments) if not a.kwarg_only),
                        {a.name: v for v, a in zip(values, arguments) if a.kwarg_only},
                    )
            except Exception as exc:  # noqa: BLE001 -- reported as the operator's failed check
                failures[name] = f"{type(exc).__name__}: {str(exc).strip()[:1500]}"
        return failures


def main(read_fd, write_fd):
    channel = Channel(read_fd, write_fd)
    channel.send("started")
    probe = Probe(channel, channel.recv())
    try:
        probe.load()
    except BaseException as exc:  # noqa: BLE001 -- SystemExit from solution code is a load error too
        channel.send("failed", status="load_error", log=error_text(exc))
        return
    try:
        variants = probe.run_model()
    except Exception as exc:  # noqa: BLE001
        channel.send("failed", status="runtime_error", log=error_text(exc))
        return
    channel.send("ran", calls=probe.recorder.calls, variants=variants, namespace=probe.recorder.namespace)
    while True:
        msg = channel.recv()
        if msg["kind"] == "grow":
            probe.grow()
            channel.send("grew")
        elif msg["kind"] == "check":
            channel.send("checked", failures=probe.check(msg["sources"]))
        else:
            return


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
