"""A load_inline `.cu` split in two: its kernels in a CUDA unit without torch's headers, its torch code in a C++ unit.

nvcc parses a `.cu` that includes torch/extension.h three times (cudafe++, cicc, the host compiler), about a minute
on a GPU host, and it has no precompiled headers. Most KernelBench-style sources are kernels over raw pointers plus
host functions that take tensors and launch them. Split at the top level, the kernels compile in a second or two and
the host functions go through the precompiled torch header like any C++ unit. Each `kernel<<<grid, block, shared,
stream>>>(args)` in host code becomes a call of an `extern "C"` launcher the CUDA unit defines, which launches the
same kernel with the same configuration, so the solution's functions behave as they would under load_inline.

Anything this cannot split without guessing raises Unsplittable (template kernels, kernels named outside a launch,
device variables the host reads, namespaces holding device code, torch types in device code, conditional code around
kernels); the caller then builds the `.cu` whole, and a split that fails to compile is rebuilt whole too, so the
solution's own compiler errors are always those of the whole build.
"""

import re
from dataclasses import dataclass, field

# Headers the CUDA unit cannot see: torch's, and what only torch's code needs.
HOST_ONLY_INCLUDE = re.compile(r'\s*#\s*include\s*[<"](torch|ATen|c10|pybind11|Python\.h)[/>".]')
# Headers every device unit gets first (torch's headers bring them in for the whole `.cu`).
DEVICE_PRELUDE = (
    "#include <cstdint>\n#include <cstddef>\n#include <cmath>\n#include <cfloat>\n#include <climits>\n"
    "#include <cuda.h>\n#include <cuda_runtime.h>\n"
)
# Names that mean device code leans on torch (types, macros, dispatch), the host library, or a template parameter.
TORCH_NAMES = re.compile(r"\b(at|c10|torch|std)::|\bTORCH_|\bAT_|\bC10_|\bscalar_t\b")
LAUNCH = re.compile(r"\b([A-Za-z_]\w*)\s*(<[^<>;{}]*>)?\s*<<<")
IDENT = re.compile(r"[A-Za-z_]\w*")
CONDITIONAL = re.compile(r"\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b")
DEVICE_WORDS = re.compile(r"__global__|__device__|__constant__|__shared__|__managed__")


class Unsplittable(Exception):
    """The `.cu` is built whole; the message says why."""


@dataclass
class Item:
    """One top-level piece of the source: a directive, a declaration or a definition, with the comments before it."""

    text: str
    kind: str  # "directive" or "code"
    head: str = ""  # code: what comes before its body or its end, comments and literals blanked


@dataclass
class Kernel:
    name: str
    params: str  # the parameter list's text, as written
    names: list = field(default_factory=list)  # the parameters' names
    item: Item = None  # where it is defined


def split(text):
    """(device unit, host unit) of `.cu` TEXT; Unsplittable where the two cannot be told apart safely."""
    items = _items(text)
    if any(i.kind == "directive" and CONDITIONAL.match(i.text) for i in items):
        raise Unsplittable("conditional compilation (#if) at the top level")
    kernels, places = {}, []
    for item in items:
        if item.kind == "directive":
            places.append("host" if HOST_ONLY_INCLUDE.match(item.text) else "both")
            continue
        where = _place(item)
        if where == "kernel":
            kernel = _kernel(item)
            if kernel.name in kernels:
                raise Unsplittable(f"kernel {kernel.name} is defined twice (overloads)")
            kernels[kernel.name] = kernel
            where = "device"
        places.append(where)
    if not kernels:
        raise Unsplittable("no __global__ kernel")
    for item, where in zip(items, places):
        if where == "device" and TORCH_NAMES.search(_mask(item.text)):
            raise Unsplittable("device code uses torch's or the standard library's names")
    device_names = _device_names(items, places, kernels)
    # Each unit's own lines, then `#line 1`: the source's lines keep their numbers in compiler messages.
    device_text = [DEVICE_PRELUDE + "#line 1\n"]
    host_text = ["#include <torch/extension.h>\n#include <cuda_runtime.h>\n#line 1\n"]
    for item, where in zip(items, places):
        if where in ("device", "both"):
            device_text.append(item.text)
        else:
            device_text.append("\n" * item.text.count("\n"))
        if where in ("host", "both"):
            if item.kind == "code":
                host_text.append(_rewrite_launches(item.text, kernels, device_names))
            else:
                host_text.append(item.text)
        else:
            # The host unit keeps its line numbers (a blank line for each line the device unit took), and declares a
            # kernel's launcher where the kernel was: after every type its parameters name.
            kernel = next((k for k in kernels.values() if k.item is item), None)
            lines = item.text.count("\n")
            if kernel and lines:
                host_text.append("\n" + _declaration(kernel) + "\n" * (lines - 1))
            else:
                host_text.append((_declaration(kernel) if kernel else "") + "\n" * lines)
    device_text.append("\n// The launchers the host unit calls in place of `kernel<<<...>>>(...)`.\n")
    for kernel in kernels.values():
        device_text.append(
            f'extern "C" void {_launcher(kernel.name)}(dim3 ks_grid, dim3 ks_block, size_t ks_shared, '
            f"cudaStream_t ks_stream{_more(kernel.params)}) {{\n"
            f"    {kernel.name}<<<ks_grid, ks_block, ks_shared, ks_stream>>>({', '.join(kernel.names)});\n}}\n"
        )
    return "".join(device_text), "".join(host_text)


def _launcher(name):
    return f"ks_launch_{name}"


def _more(params):
    return f", {params}" if params.strip() and params.strip() != "void" else ""


def _declaration(kernel):
    """The launcher's declaration on one line (the host unit's lines stay where they were)."""
    params = " ".join(_mask(kernel.params).split())  # comments blanked: a `//` must not swallow the line
    return f'extern "C" void {_launcher(kernel.name)}(dim3, dim3, size_t, cudaStream_t{_more(params)}); '


def _place(item):
    """Where a code ITEM goes: "kernel", "device", "both" or "host"."""
    head = item.head
    body = _mask(item.text)
    if re.match(r"\s*(namespace\b|extern\s+\"C\"\s*\{|extern\s+\"C\"\s*$)", head) or re.match(
        r'\s*extern\s*"C"\s*$', item.head
    ):
        if DEVICE_WORDS.search(body):
            raise Unsplittable("device code inside a namespace or an extern block")
        return "host"
    if "__global__" in head:
        if re.search(r"\btemplate\b", head):
            raise Unsplittable("a template kernel (its instantiations come from host code)")
        return "kernel"
    if re.search(r"__constant__|__managed__|__shared__", head):
        return "device"
    if "__device__" in head:
        return "both" if "__host__" in head else "device"
    if re.match(r"\s*(template\s*<[^{;]*>\s*)?(typedef|using|struct|class|union|enum)\b", head):
        if DEVICE_WORDS.search(body) and "__host__" not in body:
            return "device"  # a struct of device-only member functions
        return "both"
    if re.match(r"\s*(static\s+)?(inline\s+)?(constexpr|const)\b", head) and "(" not in head.split("=")[0]:
        return "both"
    return "host"


def _kernel(item):
    """The kernel ITEM defines: its name and parameters."""
    head = re.sub(r"__launch_bounds__\s*\([^)]*\)", lambda m: " " * len(m.group(0)), item.head)
    if not item.text.rstrip().endswith("}"):
        raise Unsplittable("a __global__ declaration without its body")
    after = head.index("__global__")
    match = re.search(r"([A-Za-z_]\w*)\s*\(", head[after:])
    if not match:
        raise Unsplittable("a kernel this reader cannot name")
    name = match.group(1)
    start = after + match.end() - 1
    end = _closing(head, start)
    params = item.text[start + 1 : end]
    names = []
    for param in _top_level_commas(params):
        param = _mask(param).split("=")[0].strip()
        if not param or param == "void":
            continue
        if "[" in param or "(" in param or "..." in param:
            raise Unsplittable(f"kernel {name}'s parameter `{param}` is not a plain declaration")
        words = IDENT.findall(param)
        if len(words) < 2:
            raise Unsplittable(f"kernel {name}'s parameter `{param}` has no name")
        names.append(words[-1])
    return Kernel(name, params, names, item)


def _device_names(items, places, kernels):
    """The names host code must not use outside a launch: the kernels and the device variables."""
    names = set(kernels)
    for item, where in zip(items, places):
        if where == "device" and re.search(r"__constant__|__managed__|__device__", item.head) and "(" not in item.head:
            names |= set(IDENT.findall(item.head.split("=")[0].split("[")[0])[-1:])
    return names


def _rewrite_launches(text, kernels, device_names):
    """TEXT with each `kernel<<<config>>>(args)` a call of the kernel's launcher."""
    out, at = [], 0
    masked = _mask(text)
    for match in LAUNCH.finditer(masked):
        if match.start() < at:
            continue
        name = match.group(1)
        if name not in kernels or match.group(2):
            raise Unsplittable(f"a launch of `{name}`, not one of this unit's kernels (or a template's)")
        close = masked.find(">>>", match.end())
        paren = masked.find("(", close + 3) if close >= 0 else -1
        if close < 0 or paren < 0 or masked[close + 3 : paren].strip():
            raise Unsplittable(f"a launch of `{name}` this reader cannot parse")
        end = _closing(masked, paren)
        config = [c.strip() for c in _top_level_commas(text[match.end() : close])]
        if not 2 <= len(config) <= 4:
            raise Unsplittable(f"a launch of `{name}` with {len(config)} configuration values")
        config += ["0"] * (4 - len(config))
        args = text[paren + 1 : end].strip()
        call = (
            f"{_launcher(name)}(dim3({config[0]}), dim3({config[1]}), (size_t)({config[2]}), "
            f"(cudaStream_t)({config[3]}){', ' if args else ''}{args})"
        )
        rest = _mask(text[at : match.start()])
        used = device_names & set(IDENT.findall(rest))
        if used:
            raise Unsplittable(f"host code names {sorted(used)} outside a launch")
        # The lines the launch spanned stay lines: what follows keeps its number.
        call += "\n" * max(0, text.count("\n", match.start(), end + 1) - call.count("\n"))
        out += [text[at : match.start()], call]
        at = end + 1
    used = device_names & set(IDENT.findall(_mask(text[at:])))
    if used:
        raise Unsplittable(f"host code names {sorted(used)} outside a launch")
    out.append(text[at:])
    return "".join(out)


# -- reading C++ at the top level ---------------------------------------------------------------------------------
def _mask(text):
    """TEXT with comments and string and character literals blanked (same length, newlines kept)."""
    out, i, n = list(text), 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            if c == '"' and i > 0 and text[i - 1] == "R":
                raise Unsplittable("a raw string literal")
            if c == "'" and i > 0 and text[i - 1].isalnum():
                i += 1  # a digit separator (1'000)
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def _closing(masked, start):
    """The index of the bracket that closes the one at START in MASKED text."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    opening, depth = masked[start], 0
    for i in range(start, len(masked)):
        if masked[i] == opening:
            depth += 1
        elif masked[i] == pairs[opening]:
            depth -= 1
            if depth == 0:
                return i
    raise Unsplittable("unbalanced brackets")


def _top_level_commas(text):
    masked = _mask(text)
    parts, depth, last = [], 0, 0
    for i, c in enumerate(masked):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[last:i])
            last = i + 1
    parts.append(text[last:])
    return parts


def _items(text):
    """TEXT's top-level items in order, each with the comments and blank lines before it."""
    masked = _mask(text)
    items, start, i, n = [], 0, 0, len(text)
    while i < n:
        c = masked[i]
        if c == "#" and masked[start:i].strip() == "":
            j = i  # a directive: to the end of its line, continuations included
            while True:
                j = masked.find("\n", j)
                if j < 0:
                    j = n
                    break
                if masked[j - 1] != "\\":
                    break
                j += 1
            items.append(Item(text[start : j + 1], "directive"))
            start = i = j + 1
            continue
        if c == "{":
            end = _closing(masked, i)
            j = end + 1
            # `struct S {...};` and `struct S {...} s;` end at their semicolon; a function at its brace.
            tail = re.match(r"[ \t]*([\w,*& \t]*);", masked[j:])
            if tail and (tail.group(1).strip() or not re.search(r"\)\s*(const\s*)?$", masked[start:i])):
                j += tail.end()
            items.append(Item(text[start:j], "code", masked[start:i]))
            start = i = j
            continue
        if c == ";":
            items.append(Item(text[start : i + 1], "code", masked[start:i]))
            start = i = i + 1
            continue
        if c in "([":
            i = _closing(masked, i) + 1
            continue
        i += 1
    if masked[start:].strip():
        raise Unsplittable("the source ends inside a declaration")
    if text[start:]:
        items.append(Item(text[start:], "directive"))
    return items
