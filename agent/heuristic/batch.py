"""The batch size as a run-time size: the graph analysed at three batch sizes, the numbers that change fitted as
affine functions of the batch, and the kernel sources written at three batch sizes merged into one that reads it.

The planners and code generators work on concrete shapes. Rather than teach each of them symbols, the problem is
analysed at its own batch size B0 and at 2*B0 and 3*B0 (the inputs the sandbox scales: dim 0 of every tensor input
sharing the first one's, else the first alone). Every number of the analysis that changes must be a*B + c with
integers a and c (checked on the third size): the analysis keeps those fits, and any batch size's analysis is
rebuilt from them. The sources are then written at the three sizes; where they differ only in numbers, each such
number, fitted the same way, becomes a C expression of `ks_batch`, the batch the binding reads from the input (a
batch norm's unbiased correction n / (n - 1) is recognized as such, n affine). Any other difference (a decision of
the planner that depends on the batch) keeps the problem's sizes, and says why: the sandbox then reports the
solution as specialized, honestly.

At run time the kernels' file holds `ks_batch`, which the binding sets under a lock before its calls; CUDA kernels
take it as a parameter of each launch (device code cannot read a host variable). The problem's sizes stay the fast
path: the tile and vectorization choices are the ones made for them, checked at run time where they depend on size.
"""

import copy
import re
from fractions import Fraction

SYMBOL = "ks_batch"
# A number of C source: integer or floating literal with its suffix, not part of a name (t0, float4) or of a longer
# number (0x1f).
NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)(f|LL|L)?(?![\w.])")


class Specialized(Exception):
    """Why the kernels keep the problem's batch size: the message names what depends on it in another way."""


# -- the analysis at several batch sizes ------------------------------------------------------------------------
def sample_sizes(size):
    """The batch sizes besides SIZE that the analysis and the sources are written at."""
    return (2 * size, 3 * size)


def scaled_inputs(inputs, group, size):
    """INPUTS with dim 0 of the tensors at positions GROUP set to SIZE (empty tensors on the inputs' own device)."""
    import torch

    return [
        torch.empty((size, *x.shape[1:]), dtype=x.dtype, device=x.device) if i in group else x
        for i, x in enumerate(inputs)
    ]


def fit(values, sizes):
    """(a, c) with value = a * size + c for every pair, integers; None when no such pair fits them all."""
    (v0, v1), (s0, s1) = values[:2], sizes[:2]
    a = Fraction(v1 - v0) / (s1 - s0)
    c = v0 - a * s0
    if a.denominator != 1 or Fraction(c).denominator != 1:
        return None
    if any(a * s + c != v for v, s in zip(values, sizes)):
        return None
    return int(a), int(c)


def ratio(count):
    """n / (n - 1): the unbiased variance's correction of a batch norm's statistics over COUNT elements."""
    return count / (count - 1)


def fit_ratio(values, sizes):
    """(a, c) with value = ratio(a * size + c) exactly, for every pair; None when there is none."""
    counts = []
    for v in values:
        if not v > 1.0:
            return None
        count = round(v / (v - 1.0))
        if count < 2 or ratio(count) != v:
            return None
        counts.append(count)
    return fit(counts, sizes)


def affine_leaves(base, others, sizes):
    """[[path, a, c], ...] for each integer of BASE (analysed at sizes[0]) that differs in OTHERS (the same analysis
    at sizes[1:]); Specialized when their structure differs or a number is not affine in the batch."""
    found = []

    def walk(path, values):
        first = values[0]
        if isinstance(first, dict):
            if any(not isinstance(v, dict) or v.keys() != first.keys() for v in values):
                raise Specialized(f"the graph at another batch size differs at {'/'.join(map(str, path))}")
            for key in first:
                walk(path + [key], [v[key] for v in values])
        elif isinstance(first, list):
            if any(not isinstance(v, list) or len(v) != len(first) for v in values):
                raise Specialized(f"the graph at another batch size differs at {'/'.join(map(str, path))}")
            for i in range(len(first)):
                walk(path + [i], [v[i] for v in values])
        elif any(not _same(v, first) for v in values):
            where = "/".join(map(str, path))
            if all(isinstance(v, float) for v in values):
                coefficients = fit_ratio(values, sizes)
                if coefficients is None:
                    raise Specialized(f"{where} changes with the batch size: {values}")
                found.append([path, *coefficients, "ratio"])
                return
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                raise Specialized(f"{where} changes with the batch size: {values}")
            coefficients = fit(values, sizes)
            if coefficients is None:
                raise Specialized(f"{where} is not affine in the batch size: {values} at {sizes}")
            found.append([path, *coefficients])

    walk([], [base, *others])
    return found


def _same(a, b):
    return type(a) is type(b) and (a == b or a != a and b != b)  # NaN is the same NaN at every batch size


def at_batch(analysis, size):
    """ANALYSIS (with its "batch" fits) rebuilt at batch SIZE."""
    out = copy.deepcopy(analysis)
    batch = out.pop("batch")
    for path, a, c, *form in batch["affine"]:
        parent = out
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = ratio(a * size + c) if form else a * size + c
    return out


# -- the sources at several batch sizes ---------------------------------------------------------------------------
def _affine(a, c):
    term = SYMBOL if a == 1 else f"{SYMBOL} * {a}LL"
    return term if c == 0 else f"{term} {'+' if c > 0 else '-'} {abs(c)}LL"


def _expression(values, sizes, suffix):
    coefficients = fit([Fraction(v.rstrip(".")) for v in values], sizes)
    if coefficients is None:
        counts = fit_ratio([float(v) for v in values], sizes)
        if counts is None:
            raise Specialized(f"a size in the kernels is not affine in the batch size: {values} at {sizes}")
        count = _affine(*counts)
        value = f"((double)({count}) / (double)({count} - 1LL))"
        return f"((float){value})" if suffix == "f" else value
    expr = _affine(*coefficients)
    if suffix == "f":
        return f"((float)({expr}))"
    if "." in values[0] or "e" in values[0].lower():
        return f"((double)({expr}))"
    return f"({expr})"


def _merge_code(lines, sizes):
    """One line of code from its versions at SIZES: numbers that differ become expressions of the batch."""
    if all(line == lines[0] for line in lines):
        return lines[0]
    parts = [NUMBER.split(line) for line in lines]  # text, number, suffix, text, number, suffix, ..., text
    if any(len(p) != len(parts[0]) for p in parts):
        raise Specialized(f"the kernels differ at another batch size: {lines[0].strip()[:120]}")
    out = []
    for i, piece in enumerate(parts[0]):
        versions = [p[i] for p in parts]
        if i % 3 == 0 or i % 3 == 2:  # text or suffix
            if any(v != piece for v in versions):
                raise Specialized(f"the kernels differ at another batch size: {lines[0].strip()[:120]}")
            if i % 3 == 0:
                out.append(piece)
        elif all(v == piece for v in versions):
            out.append(piece + (parts[0][i + 1] or ""))
        else:
            out.append(_expression(versions, sizes, parts[0][i + 1]))
    return "".join(out)


def _split_comment(line):
    at = line.find("//")
    return (line, "") if at < 0 else (line[:at], line[at:])


def merge(texts, sizes):
    """One C/C++/CUDA source from its versions TEXTS written at batch SIZES (the first the problem's): comments are
    the first's, numbers that differ become C expressions of ks_batch; Specialized for any other difference."""
    split = [text.split("\n") for text in texts]
    if any(len(lines) != len(split[0]) for lines in split):
        raise Specialized("the kernels at another batch size have another structure")
    out = []
    for versions in zip(*split):
        codes = [_split_comment(line)[0] for line in versions]
        out.append(_merge_code(codes, sizes) + _split_comment(versions[0])[1])
    return "\n".join(out)


def merge_python(texts):
    """model_new.py from its versions: only its first line (the plan's description, with its sizes) may differ."""
    split = [text.split("\n") for text in texts]
    if any(lines[1:] != split[0][1:] for lines in split):
        raise Specialized("model_new.py differs at another batch size")
    return texts[0]


def device_functions_reading_the_batch(source):
    """Names of the CUDA __device__ functions of SOURCE whose body reads ks_batch (a host variable: they cannot)."""
    names, current = [], None
    for line in source.split("\n"):
        if current is None and line.startswith("__device__") and line.rstrip().endswith("{"):
            current = line
        elif current is not None and line == "}":
            current = None
        elif current is not None and SYMBOL in line and current not in names:
            names.append(current)
    return names


def runtime_kernels(source, size, cuda):
    """A merged kernel source with the batch variable it reads: a host variable the binding sets before every call
    (its initial value the problem's SIZE) and, on CUDA, a parameter of every kernel, given at every launch."""
    if cuda:
        bad = device_functions_reading_the_batch(source)
        if bad:
            raise Specialized(f"a device function's body depends on the batch size ({bad[0].strip()[:80]})")
        source = re.sub(r"__global__ void (\w+)\(", rf"__global__ void \1(int64_t {SYMBOL}, ", source)
        source = re.sub(r"(\w+)<<<([^;]*?)>>>\(", rf"\1<<<\2>>>({SYMBOL}, ", source)
    head, _, rest = source.partition("\n")
    declaration = (
        "#include <cstdint>\n"
        "// The batch size of the current call (dim 0 of the inputs that scale with it), set by the binding.\n"
        f"static int64_t {SYMBOL} = {size};\n"
        f"void ks_set_batch(int64_t batch) {{ {SYMBOL} = batch; }}\n"
    )
    return f"{head}\n{declaration}{rest}"
