"""Anti-hacking: the dispatch recorder for PyTorch fallbacks, tamper checks, and an audit hook.

The recorder is a TorchDispatchMode active around ModelNew.forward: every ATen operator reached from it,
from Python, `torch.nn.functional`, `nn` modules, or C++ code through the dispatcher, is seen. Allocation,
view and copy operators are allowed (they compute nothing); any other ATen or prims operator is a
PyTorch fallback. Operators of other namespaces are the solution's own kernels; whatever they dispatch
inside is recorded too, so a custom op that merely wraps torch.matmul is caught.
"""

import builtins
import inspect
import statistics
import sys
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

ALLOWED = frozenset(
    """
empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like ones ones_like full full_like
new_zeros new_ones new_full fill_ zero_ scalar_tensor lift_fresh lift_fresh_copy
view _unsafe_view view_as as_strided as_strided_ permute transpose t expand expand_as squeeze unsqueeze
slice select narrow split split_with_sizes chunk unbind flatten unflatten alias detach detach_ reshape
contiguous clone copy_ _to_copy to _copy_from _copy_from_and_resize resize_ set_ record_stream
sym_size sym_stride sym_numel sym_storage_offset is_contiguous size stride dim numel is_same_size
_local_scalar_dense item is_nonzero _has_compatible_shallow_copy_type
""".split()
)
_FRAMEWORK_NAMESPACES = ("aten", "prims")


def _keys_below_python(args, kwargs):
    from torch.utils._pytree import tree_leaves

    below = torch._C._dispatch_keyset_full_after(torch._C.DispatchKey.Python)
    keys = None
    for leaf in tree_leaves((args, kwargs)):
        if isinstance(leaf, torch.Tensor):
            k = torch._C._dispatch_keys(leaf)
            keys = k if keys is None else keys | k
    return None if keys is None else keys & below


class Recorder(TorchDispatchMode):
    """Records every operator dispatched while active; `fallbacks` are the forbidden ones, with counts."""

    def __init__(self, calls=None):
        super().__init__()
        self.calls = calls if calls is not None else {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = f"{func.namespace}::{func.__name__.split('.')[0]}"
        self.calls[name] = self.calls.get(name, 0) + 1
        kwargs = kwargs or {}
        if func.namespace in _FRAMEWORK_NAMESPACES:
            return func(*args, **kwargs)
        # A custom op: run its kernel below the Python key with a fresh recorder pushed, so that whatever
        # it dispatches inside (a Python impl calling torch.matmul, C++ calling at::matmul) is seen too.
        keys = _keys_below_python(args, kwargs)
        if keys is None:
            return func(*args, **kwargs)
        with Recorder(self.calls):
            return func.redispatch(keys, *args, **kwargs)

    @property
    def fallbacks(self):
        return {
            name: n
            for name, n in self.calls.items()
            if name.split("::")[0] in _FRAMEWORK_NAMESPACES and name.split("::")[1] not in ALLOWED
        }


def fallback_violation(fallbacks):
    listed = ", ".join(f"{name} x{n}" for name, n in sorted(fallbacks.items()))
    return (
        f"PyTorch compute operators reached from ModelNew.forward: {listed}. Strict mode allows only "
        f"allocation, view and copy operators; compute in your own kernels"
    )


# What the harness relies on, captured before any solution code is imported.
def _watched():
    import sandbox.timing as timing
    import sandbox.correctness as correctness
    import sandbox.protocol as protocol
    import sandbox.transfer as transfer

    items = {
        "time.perf_counter": (time, "perf_counter"),
        "time.perf_counter_ns": (time, "perf_counter_ns"),
        "time.monotonic": (time, "monotonic"),
        "time.time": (time, "time"),
        "torch.cuda.synchronize": (torch.cuda, "synchronize"),
        "torch.cuda.Event": (torch.cuda, "Event"),
        "torch.cuda.Event.record": (torch.cuda.Event, "record"),
        "torch.cuda.Event.elapsed_time": (torch.cuda.Event, "elapsed_time"),
        "torch.cuda.Event.synchronize": (torch.cuda.Event, "synchronize"),
        "torch.cuda.current_stream": (torch.cuda, "current_stream"),
        "torch.cuda.Stream": (torch.cuda, "Stream"),
        "torch.cuda.graph": (torch.cuda, "graph"),
        "torch.allclose": (torch, "allclose"),
        # Not torch.manual_seed: importing torch._dynamo rebinds it, and a patched seed only spoils the
        # patcher's own inputs, which the reference process draws independently.
        "torch.isfinite": (torch, "isfinite"),
        "torch.Tensor.zero_": (torch.Tensor, "zero_"),
        "torch.Tensor.__eq__": (torch.Tensor, "__eq__"),
        "torch.nn.Module.__call__": (torch.nn.Module, "__call__"),
        "torch.nn.Module._call_impl": (torch.nn.Module, "_call_impl"),
        "statistics.median": (statistics, "median"),
        "statistics.quantiles": (statistics, "quantiles"),
    }
    # Builtins the timing and comparison code computes with (a patched `sorted` would reorder the samples).
    for name in ("sorted", "len", "min", "max", "sum", "abs", "round", "int", "float", "iter", "next", "range"):
        items[f"builtins.{name}"] = (builtins, name)
    for module in (timing, correctness, protocol, transfer):
        for name, value in vars(module).items():
            # Every callable, the captured ones too (timing's `_perf_ns` is time.perf_counter_ns).
            if callable(value):
                items[f"{module.__name__}.{name}"] = (module, name)
                # The harness's own classes: their methods (the CPU clock's `sample`) can be replaced in place.
                if isinstance(value, type) and value.__module__ == module.__name__:
                    for attr, member in vars(value).items():
                        if inspect.isfunction(member):
                            items[f"{module.__name__}.{name}.{attr}"] = (value, attr)
    return items


class Integrity:
    """Snapshot of the functions the harness trusts; `tampered()` names any that were replaced since."""

    def __init__(self):
        self._items = _watched()
        self._originals = {k: getattr(owner, attr) for k, (owner, attr) in self._items.items()}
        # A function's code can be swapped while the function object stays the same.
        self._codes = {k: getattr(v, "__code__", None) for k, v in self._originals.items()}

    def watched_pairs(self):
        return list(self._items.values())

    def tampered(self):
        return sorted(
            k
            for k, (owner, attr) in self._items.items()
            if getattr(owner, attr, None) is not self._originals[k]
            or getattr(self._originals[k], "__code__", None) is not self._codes[k]
        )


class AuditLog:
    """A sys.audit hook (which nothing can remove) that notes raw-memory access and patches of the functions
    the harness trusts while solution code runs, including a patch undone before the integrity check."""

    WATCHED = ("ctypes.cdata", "ctypes.string_at", "ctypes.wstring_at", "sys.settrace", "sys.setprofile")

    def __init__(self, integrity):
        self.active = False
        self.events = []
        self._watched = {(id(owner), attr) for owner, attr in integrity.watched_pairs()}
        # Assigning a function's __code__ raises an audit event (assigning a class or module attribute does
        # not): a swap undone before the integrity check is still seen.
        self._functions = {id(getattr(owner, attr, None)) for owner, attr in integrity.watched_pairs()}
        sys.addaudithook(self._hook)

    def _hook(self, event, args):
        if not self.active or len(self.events) >= 20:
            return
        if event in self.WATCHED:
            self.events.append(event)
        elif event == "object.__setattr__" and (
            (id(args[0]), args[1]) in self._watched or args[1] == "__code__" and id(args[0]) in self._functions
        ):
            self.events.append(f"set {getattr(args[0], '__qualname__', args[0])!s}.{args[1]}")
