"""Duplicate detection: a normalised graph hash of a problem's dispatcher op trace, the KernelBench index (so no
evaluation problem leaks into training), and the claims that let parallel workers keep one task per graph.

The trace runs on the meta device: every problem is hashed the same way at no compute or memory cost, and
sizes, scalar arguments, views and copies are left out, so a task that differs from another only in its
shapes or in how it spells a reshape hashes the same.
"""

import ast
import hashlib
import json
import logging
import os
from pathlib import Path

from sandbox import problems_file, settings

log = logging.getLogger(__name__)

# Operators that move no data a kernel computes: their outputs alias their first tensor argument.
PASS_THROUGH = {
    "view",
    "_unsafe_view",
    "reshape",
    "expand",
    "expand_as",
    "t",
    "transpose",
    "permute",
    "squeeze",
    "unsqueeze",
    "contiguous",
    "clone",
    "detach",
    "alias",
    "as_strided",
    "flatten",
    "unflatten",
    "_to_copy",
    "to",
    "copy_",
    "lift_fresh",
    "lift_fresh_copy",
    "slice",
    "select",
    "split",
    "split_with_sizes",
    "chunk",
    "unbind",
    "narrow",
    "view_as",
    "reshape_as",
    "movedim",
    "_reshape_alias",
    "unsafe_split",
    "unsafe_chunk",
    "expand_copy",
    "view_copy",
    "permute_copy",
    "t_copy",
    "transpose_copy",
    "squeeze_copy",
    "unsqueeze_copy",
    "_unsafe_index",
}


# A trace longer than this (an RNN unrolled over a long sequence) is hashed by its source instead: tracing
# it op by op costs tens of seconds. Every problem is held to the same rule, so fingerprints stay comparable.
MAX_NODES = 3000


class TraceTooLong(Exception):
    """The op trace passed MAX_NODES."""


class FingerprintError(Exception):
    """A problem could not even be read to be hashed (syntax error, no Model)."""


def _recorder():
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Recorder(TorchDispatchMode):
        """Records (op, argument refs) per aten call; tensors are known by id, kept alive meanwhile."""

        def __init__(self, inputs):
            super().__init__()
            self.refs, self.keep, self.nodes = {}, [], []
            for k, t in enumerate(inputs):
                self._name(t, f"i{k}")

        def _name(self, t, ref):
            self.refs[id(t)] = ref
            self.keep.append(t)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            import torch

            out = func(*args, **(kwargs or {}))
            flat, _ = tree_flatten((args, kwargs or {}))
            tensors = [a for a in flat if isinstance(a, torch.Tensor)]
            op = getattr(getattr(func, "overloadpacket", None), "__name__", str(func))
            outs = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor)]
            if op in PASS_THROUGH and tensors:
                ref = self.refs.get(id(tensors[0]), "c")
                for o in outs:
                    self._name(o, ref)
                return out
            if len(self.nodes) >= MAX_NODES:
                raise TraceTooLong(f"more than {MAX_NODES} operators")
            node = f"n{len(self.nodes)}"
            self.nodes.append([op, [self.refs.get(id(t), "c") for t in tensors]])
            for o in outs:
                self._name(o, node)
            return out

    return Recorder


def graph_of(model, inputs):
    """The normalised op graph of model(*inputs): [[op, [refs]], ...] plus the output refs."""
    import torch
    from torch.utils._pytree import tree_flatten

    recorder = _recorder()([t for t in inputs if isinstance(t, torch.Tensor)])
    with torch.no_grad(), recorder:
        out = model(*inputs)
    outs = [recorder.refs.get(id(t), "c") for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
    return {"nodes": recorder.nodes, "outputs": outs}


def _digest(data):
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:32]


def source_fingerprint(source):
    """A hash of the source's syntax tree without docstrings and names of locals: the fallback fingerprint."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise FingerprintError(f"the problem does not parse: {exc.msg} at line {exc.lineno}") from None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(getattr(body[0], "value", None), ast.Constant)
        ):
            body.pop(0)
    return "source:" + hashlib.sha256(ast.dump(tree, annotate_fields=False).encode()).hexdigest()[:32]


def fingerprint(source, namespace_name="ks_fingerprint"):
    """'graph:<hash>' of the problem's op trace on the meta device, or 'source:<hash>' when it cannot run there.

    Runs the problem's code: call it on trusted sources only (the catalogue's compositions, KernelBench), or
    inside the sandbox's jail (training.synthesis.probe) for anything else.
    """
    import torch

    namespace = {"__name__": namespace_name}
    try:
        exec(compile(source, "<problem>", "exec"), namespace)  # noqa: S102 -- trusted, see the docstring
    except Exception as exc:  # noqa: BLE001 -- a problem that does not import gets its source hashed
        log.debug("fingerprint: the problem does not import (%s); hashing its source", exc)
        return source_fingerprint(source)
    if "Model" not in namespace:
        raise FingerprintError("the problem defines no Model")
    try:
        torch.random.default_generator.manual_seed(0)
        with torch.device("meta"):
            model = namespace["Model"](*namespace["get_init_inputs"]())
            inputs = list(namespace["get_inputs"]())
        inputs = [t.to("meta") if isinstance(t, torch.Tensor) else t for t in inputs]
        return "graph:" + _digest(graph_of(model, inputs))
    except Exception as exc:  # noqa: BLE001 -- data-dependent code cannot run on meta: hash the source instead
        log.debug("fingerprint: meta trace failed (%s); hashing the source", exc)
        return source_fingerprint(source)


# -- KernelBench ---------------------------------------------------------------------------------------------


def kernelbench_index(path=None):
    """{fingerprint: 'level N/name'} of every KernelBench problem in PATH (default: sandbox.problems_file.locate()),
    cached by content and torch.

    An empty dict when there is no such file (the leakage check then says so in the run's summary).
    """
    import torch

    path = Path(path) if path else problems_file.locate()
    if path is None or not path.is_file():
        log.warning(
            "no KernelBench problems at %s: the leakage check has nothing to compare with",
            path or " or ".join(str(p) for p in problems_file.SOURCES),
        )
        return {}
    here = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:8]
    key = hashlib.sha256(path.read_bytes() + torch.__version__.encode() + here.encode()).hexdigest()[:24]
    cache = settings.cache_dir() / "synthesis" / f"kernelbench-{key}.json"
    try:
        return json.loads(cache.read_text())
    except (OSError, ValueError):
        pass
    index = {}
    for problem in problems_file.read_problems(path):
        try:
            index.setdefault(
                fingerprint(problem.code, f"ks_kb_{problem.level}_{problem.problem_id}"),
                f"KernelBench level {problem.level}/{problem.name}",
            )
        except FingerprintError as exc:
            log.warning("KernelBench problem %s cannot be hashed: %s", problem.name, exc)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(index))
    os.replace(tmp, cache)
    return index


# -- claims: one kept task per fingerprint, across threads or across RQ workers --------------------------------


class LocalClaims:
    """Fingerprint -> owner for the worker processes of one local run, held by a multiprocessing manager.

    Each probe runs in its own process (the sandbox gives a jail a uid derived from its process id, so two
    jails of one process would share a uid and kill each other's processes on close).
    """

    def __init__(self, manager, initial=None):
        self._owners = manager.dict(initial or {})
        self._lock = manager.Lock()

    def claim(self, fp, owner):
        """None if FP was free and is now OWNER's; else the owner that holds it."""
        held = self._owners.setdefault(fp, owner)  # one call in the manager: atomic
        return None if held == owner else held

    def release(self, fp, owner):
        with self._lock:
            if self._owners.get(fp) == owner:
                del self._owners[fp]


class RedisClaims:
    """The same over a Redis hash, for RQ workers on many hosts: HSETNX makes a claim atomic."""

    def __init__(self, url, key):
        self.url, self.key = url, key
        self._client = None

    @property
    def client(self):
        if self._client is None:
            import redis

            self._client = redis.Redis.from_url(self.url)
        return self._client

    def reset(self, initial):
        pipe = self.client.pipeline()
        pipe.delete(self.key)
        if initial:
            pipe.hset(self.key, mapping=initial)
        pipe.execute()

    def claim(self, fp, owner):
        if self.client.hsetnx(self.key, fp, owner):
            return None
        held = self.client.hget(self.key, fp)
        return held.decode() if held is not None else None

    def release(self, fp, owner):
        # Delete only our own claim: check and delete in one server-side step.
        self.client.eval(
            "if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then "
            "return redis.call('HDEL', KEYS[1], ARGV[1]) end return 0",
            1,
            self.key,
            fp,
            owner,
        )

    def __getstate__(self):
        return {"url": self.url, "key": self.key, "_client": None}
