"""Fake implementations inferred from what each operator did: every output's sizes as an expression of the
arguments' sizes (and integer arguments) that holds on every recorded call, its dtype and its memory layout.

The calls come from sandbox.package.probe: ModelNew on the problem's inputs and at other batch sizes, and each
operator called again with one size of its arguments grown at a time. An expression that fits all of them is
written with the arguments' symbolic sizes, so torch.compile(dynamic=True) traces it; where none fits, the fake
raises and says why (the package's notes and README repeat it).
"""

from dataclasses import dataclass

# Integer arithmetic tried on a size s: (s + a) // c and s * c + a, the forms of pools, convolutions, strided and
# transposed ones, padding and cropping.
_OFFSETS = range(-16, 17)
_DIVISORS = (1, 2, 3, 4)
_FACTORS = (2, 3, 4)


@dataclass
class Fake:
    """The fake implementation of one operator: its parameters, body and, for the README, what it computes
    (None: no rule fits, the body raises, `why` says what went wrong)."""

    params: str
    body: str
    assumption: str | None
    why: str = ""


def signature(params, annotated):
    parts, star = [], False
    for p in params:
        if p.kwarg_only and not star:
            parts.append("*")
            star = True
        text = f"{p.name}: {p.type}" if annotated else p.name
        parts.append(text + (f"={p.default}" if p.default is not None else ""))
    return ", ".join(parts)


def unknown(op, why):
    """The fake of an operator whose shapes could not be inferred: it raises with WHY."""
    message = f"the fake implementation of {op.full_name} could not be inferred: {why}"
    body = (
        f"    # No rule fits: {why}\n    # EDIT ME: return empty tensors of the shapes and dtypes this operator "
        f"returns.\n    raise NotImplementedError({message + '; write it in ops.py'!r})"
    )
    return Fake(signature(op.params, annotated=False), body, None, why)


def infer(op, calls, device):
    """The Fake of OP from CALLS (dicts with 'args' and 'outs' as sandbox.package.probe records them; 'trusted'
    marks calls of a ModelNew whose output matched Model)."""
    params = signature(op.params, annotated=False)
    if not op.returns:
        written = ", ".join(op.mutates) or "its arguments"
        return Fake(
            params,
            f"    # Writes into {written} and returns nothing.\n    return None",
            f"returns nothing (writes into {written})",
        )
    if any(r != "torch.Tensor" for r in op.returns):
        return unknown(op, f"it returns {', '.join(op.returns)}; only tensors are inferred")
    calls = [c for c in calls if c.get("outs") is not None and len(c["outs"]) == len(op.returns)]
    if not calls:
        return unknown(op, "it was not called when ModelNew ran on the problem's inputs")
    fitted = _fit(op, calls, calls, device)
    if isinstance(fitted, str) and any(not c.get("trusted") for c in calls):
        # Calls with grown sizes ran the kernel where the model never does: what the model's own calls show wins,
        # but a size that changed on any call is never a constant.
        trusted = [c for c in calls if c.get("trusted")]
        fitted = _fit(op, trusted, calls, device) if trusted else fitted
    if isinstance(fitted, str):
        return unknown(op, fitted)
    outputs, described = zip(*fitted)
    shown = outputs[0] if len(outputs) == 1 else f"({', '.join(outputs)})"
    sources = _sources(calls)
    comment = f"    # Inferred from {len(calls)} calls ({sources}); checked with torch.library.opcheck.\n"
    return Fake(params, f"{comment}    return {shown}", "; ".join(described))


def _sources(calls):
    kinds = {}
    for c in calls:
        kinds[c.get("source", "problem")] = kinds.get(c.get("source", "problem"), 0) + 1
    return ", ".join(f"{n} at {kind}" if n > 1 else kind for kind, n in kinds.items())


def _fit(op, calls, seen, device):
    """[(expression, description)] per output fitting CALLS, or why none fits; a dimension is a constant only if
    it has one value on all the calls SEEN."""
    fitted = []
    for k in range(len(op.returns)):
        outs = [c["outs"][k] for c in calls]
        if any(o is None or o.get("t") != "tensor" for o in outs):
            return f"output {k} is not a tensor on every call"
        ranks = {len(o["shape"]) for o in outs}
        if len(ranks) > 1:
            return f"output {k} has {' or '.join(map(str, sorted(ranks)))} dimensions on different calls"
        sizes = []
        for j in range(ranks.pop()):
            size = _size(
                op, calls, k, j, {c["outs"][k]["shape"][j] for c in seen if len(c["outs"][k].get("shape", ())) > j}
            )
            if size is None:
                seen = sorted({tuple(o["shape"]) for o in outs})[:4]
                return (
                    f"no expression of the arguments' sizes gives dimension {j} of output {k} on every call "
                    f"(shapes seen: {', '.join(map(str, seen))}); its size may depend on the data"
                )
            sizes.append(size)
        dtype = _dtype(op, calls, k)
        if dtype is None:
            return f"output {k}'s dtype follows no argument and changes between calls"
        order = _layout(outs)
        if order is None:
            return f"output {k} is not a dense tensor in one fixed dimension order (a view or a strided result)"
        where = _device(op, device)
        shape = "(" + ", ".join(sizes) + ("," if len(sizes) == 1 else "") + ")"
        if order == list(range(len(sizes))):
            expression = f"torch.empty({shape}, dtype={dtype}, device={where})"
        else:
            stored = "(" + ", ".join(sizes[d] for d in order) + ("," if len(order) == 1 else "") + ")"
            inverse = [order.index(d) for d in range(len(order))]
            expression = f"torch.empty({stored}, dtype={dtype}, device={where}).permute({', '.join(map(str, inverse))})"
        layout = "" if order == list(range(len(sizes))) else f", dimensions stored in the order {order}"
        fitted.append((expression, f"`[{', '.join(sizes)}]` of `{dtype}`{layout}"))
    return fitted


def _atoms(op, call):
    """{expression: value} of the sizes and integers CALL's arguments offer, in the order they are preferred."""
    atoms = {}
    for p, arg in zip(op.params, call["args"]):
        if arg.get("t") == "tensor":
            for d, n in enumerate(arg["shape"]):
                atoms[(p.name, d)] = n
        elif arg.get("t") == "int":
            atoms[(p.name, None)] = arg["v"]
    return atoms


def _text(atom):
    """The Python text of an atom: `name.shape[d]` for a size, `name` for an integer argument (or a constant)."""
    name, d = atom
    return name if d is None else f"{name}.shape[{d}]"


def _candidates(op, calls, j, values):
    """Expressions for dimension J of an output, most plausible first, as (text, function of an atom dict); VALUES:
    the sizes it had on every call seen."""
    first = _atoms(op, calls[0])
    tensors = [a for a in first if a[1] is not None]
    same_dim = [a for a in tensors if a[1] == j]
    ints = [a for a in first if a[1] is None]
    for atom in same_dim + [a for a in tensors if a[1] != j] + ints:
        yield _text(atom), lambda v, atom=atom: v.get(atom)
    if len(values) == 1:  # never varied: a constant is the simplest story, before arithmetic that happens to fit
        value = next(iter(values))
        yield str(value), lambda v, value=value: value
    for atom in same_dim + [a for a in tensors if a[1] != j] + ints:
        for c in _DIVISORS:
            for a in sorted(_OFFSETS, key=abs):
                if c == 1 and a == 0:
                    continue
                inner = f"{_text(atom)} {'+' if a >= 0 else '-'} {abs(a)}" if a else _text(atom)
                text = inner if c == 1 else (f"({inner}) // {c}" if a else f"{inner} // {c}")
                yield text, lambda v, atom=atom, a=a, c=c: None if v.get(atom) is None else (v[atom] + a) // c
        for c in _FACTORS:
            for a in sorted(_OFFSETS, key=abs):
                text = f"{_text(atom)} * {c}" + (f" {'+' if a >= 0 else '-'} {abs(a)}" if a else "")
                yield text, lambda v, atom=atom, a=a, c=c: None if v.get(atom) is None else v[atom] * c + a
    yield from _window_candidates(same_dim + [a for a in tensors if a[1] != j], ints + tensors, ints)
    for name in dict.fromkeys(a[0] for a in tensors):
        dims = [a for a in tensors if a[0] == name]
        for start in range(len(dims)):
            for end in range(start + 2, len(dims) + 1):
                run = dims[start:end]
                yield " * ".join(map(_text, run)), lambda v, run=run: _product(v, run)


def _window_candidates(sizes, kernels, ints):
    """Sizes of sliding windows (pools, convolutions) over a size A with a kernel K (an integer argument or another
    argument's size, a weight's), stride S, padding P and dilation D (integer arguments or small constants):
    (A + 2P - D(K - 1) - 1) // S + 1, and the transposed (A - 1)S - 2P + D(K - 1) + 1."""
    strides = ints + [(str(n), None) for n in (1, 2, 3, 4)]
    paddings = ints + [(str(n), None) for n in (0, 1, 2, 3)]
    dilations = [("1", None)] + ints + [("2", None)]  # dilation is rarely an argument: 1 first
    for a in sizes:
        for k in kernels:
            if k == a:
                continue
            for d in dilations:
                for p in paddings:
                    for s in strides:
                        yield (
                            _window_text(a, k, s, p, d, transposed=False),
                            lambda v, a=a, k=k, s=s, p=p, d=d: _window(v, a, k, s, p, d, transposed=False),
                        )
                        yield (
                            _window_text(a, k, s, p, d, transposed=True),
                            lambda v, a=a, k=k, s=s, p=p, d=d: _window(v, a, k, s, p, d, transposed=True),
                        )


def _value(v, atom):
    """An atom's value in V, or the constant it names."""
    return int(atom[0]) if atom[1] is None and atom[0].isdigit() else v.get(atom)


def _window(v, a, k, s, p, d, transposed):
    A, K, S, P, D = (_value(v, x) for x in (a, k, s, p, d))
    if None in (A, K, S, P, D) or S <= 0:
        return None
    if transposed:
        return (A - 1) * S - 2 * P + D * (K - 1) + 1
    return (A + 2 * P - D * (K - 1) - 1) // S + 1


def _window_text(a, k, s, p, d, transposed):
    A, K, S, P, D = (_text(x) for x in (a, k, s, p, d))
    pad = "" if P == "0" else f" - {2 * int(P)}" if P.isdigit() else f" - 2 * {P}"
    reach = f" + {K}" if D == "1" else f" + {D} * ({K} - 1) + 1"
    if transposed:
        return (f"{A} - 1" if S == "1" else f"({A} - 1) * {S}") + pad + reach
    inner = A + pad.replace(" - ", " + ", 1) + (f" - {K}" if D == "1" else f" - {D} * ({K} - 1) - 1")
    return f"{inner} + 1" if S == "1" else f"({inner}) // {S} + 1"


def _product(values, atoms):
    total = 1
    for atom in atoms:
        if values.get(atom) is None:
            return None
        total *= values[atom]
    return total


def _size(op, calls, k, j, values):
    rows = [dict(c, outs_j=c["outs"][k]["shape"][j]) for c in calls]
    atoms = [_atoms(op, c) for c in rows]
    for text, value in _candidates(op, rows, j, values):
        if all(value(a) == r["outs_j"] for a, r in zip(atoms, rows)):
            return text
    return None


def _dtype(op, calls, k):
    dtypes = [c["outs"][k]["dtype"] for c in calls]
    for i, p in enumerate(op.params):
        if all(i < len(c["args"]) and c["args"][i].get("dtype") == d for c, d in zip(calls, dtypes)):
            return f"{p.name}.dtype"
    return f"torch.{dtypes[0]}" if len(set(dtypes)) == 1 else None


def _device(op, device):
    for p in op.params:
        if p.type == "torch.Tensor":
            return f"{p.name}.device"
    return repr(device)


def dense_order(shape, stride):
    """The dimensions from outermost to innermost in memory if SHAPE with STRIDE is dense (sizes of 1 and 0 in
    place); None otherwise."""
    big = sorted((d for d, n in enumerate(shape) if n > 1), key=lambda d: (-stride[d], d))
    expected = 1
    for d in reversed(big):
        if stride[d] != expected:
            return None
        expected *= shape[d]
    order, rest = [], iter(big)
    for d, n in enumerate(shape):
        order.append(d if n <= 1 else next(rest))
    return order


def _layout(outs):
    """The one dimension order every output is stored in (list(range(rank)) for contiguous), or None."""
    orders = []
    for o in outs:
        if o.get("offset", 0) != 0:
            return None
        order = dense_order(o["shape"], o["stride"])
        if order is None:
            return None
        orders.append(order)
    significant = {tuple(order) for order, o in zip(orders, outs) if sum(n > 1 for n in o["shape"]) > 1}
    if len(significant) > 1:
        return None
    return list(significant.pop()) if significant else list(range(len(outs[0]["shape"])))
