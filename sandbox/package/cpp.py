"""The operators a C++ binding defines: library schemas, and pybind11 functions typed from their C++ signatures."""

import keyword
import re
from dataclasses import dataclass, field

from sandbox.errors import PackagingError

# A registration block: PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {...}, TORCH_LIBRARY(KS_NAMESPACE, m) {...},
# STABLE_TORCH_LIBRARY(...), a workspace's own macro around them (KS_LIBRARY(KS_NAMESPACE, m)), ..._IMPL blocks.
_BLOCK = re.compile(r"\b([A-Z][A-Z0-9_]*)\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)\s*\{")
_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|("(?:\\.|[^"\\\n])*")', re.S)
_NOT_A_RETURN_TYPE = {"return", "else", "new", "delete", "throw", "case", "goto", "do", "sizeof"}
_SPECIFIERS = {"static", "inline", "extern", '"C"', "constexpr", "TORCH_API", "__host__", "__forceinline__", "const"}

_TENSOR = {"torch::Tensor", "at::Tensor", "Tensor", "torch::stable::Tensor"}
_SCALARS = {
    **dict.fromkeys(
        [
            "int",
            "long",
            "longlong",
            "int64_t",
            "int32_t",
            "std::int64_t",
            "std::int32_t",
            "size_t",
            "std::size_t",
            "unsigned",
            "unsignedint",
            "uint32_t",
            "uint64_t",
            "c10::SymInt",
        ],
        "int",
    ),
    **dict.fromkeys(["float", "double"], "float"),
    "bool": "bool",
    **dict.fromkeys(["std::string", "c10::string_view", "std::string_view"], "str"),
    **dict.fromkeys(["torch::Scalar", "at::Scalar", "c10::Scalar", "Scalar"], "torch.types.Number"),
}
_LISTS = {
    **dict.fromkeys(["at::IntArrayRef", "torch::IntArrayRef", "c10::IntArrayRef", "IntArrayRef"], "list[int]"),
    **dict.fromkeys(["at::TensorList", "torch::TensorList", "TensorList"], "list[torch.Tensor]"),
}
_BUILTIN_WORDS = {"int", "long", "float", "double", "char", "short", "unsigned", "signed", "bool"}
# The schema types torch.library gives these annotations, and how torch prints a parsed schema's types.
_SCHEMA_OF = {
    "torch.Tensor": "Tensor",
    "int": "SymInt",
    "float": "float",
    "bool": "bool",
    "str": "str",
    "torch.types.Number": "Scalar",
}
_SCHEMA_TYPES = {
    "Tensor": "torch.Tensor",
    "Optional[Tensor]": "Optional[torch.Tensor]",
    "List[Tensor]": "list[torch.Tensor]",
    "List[int]": "list[int]",
    "List[float]": "list[float]",
    "number": "torch.types.Number",
}


@dataclass
class Param:
    name: str
    type: str  # a Python annotation: torch.Tensor, int, Optional[torch.Tensor], list[int], ...
    default: str | None = None  # Python source of the default, for schema operators
    kwarg_only: bool = False


@dataclass
class Op:
    """One operator of the package: `torch.ops.<namespace>.<name>`."""

    name: str
    params: list
    returns: list  # annotations of the outputs; empty when it returns nothing
    overload: str = ""
    # Set for a pybind11 function: the package wraps `<module>.<function>` in a torch.library custom operator.
    function: str | None = None
    module: str = "_C"
    mutates: list = field(default_factory=list)
    schema: str = ""

    @property
    def full_name(self):
        """name.overload, as after `<namespace>::` in the operator's qualified name."""
        return f"{self.name}.{self.overload}" if self.overload else self.name


def _code(source):
    """SOURCE without comments and preprocessor lines: what the scanners below read."""
    text = _COMMENT_OR_STRING.sub(lambda m: m.group(1) or " ", source)
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def _skip_string(text, i):
    i += 1
    while i < len(text) and text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return i


def _closing(text, start, opening, closing):
    """Index of the bracket closing the one at START, skipping string literals."""
    depth, i = 0, start
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i = _skip_string(text, i)
        elif ch == opening:
            depth += 1
        elif ch == closing:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise PackagingError(f"unbalanced {opening}{closing} in the binding near: {text[start : start + 80]!r}")


def _split(text, sep=","):
    """Split at SEP outside brackets and string literals."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i = _skip_string(text, i)
        elif ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
        i += 1
    tail = text[start:].strip()
    return parts + [tail] if tail or parts else parts


def _string_literal(arg):
    pieces = re.findall(r'"((?:\\.|[^"\\])*)"', arg)
    if not pieces or re.sub(r'"(?:\\.|[^"\\])*"', "", arg).strip():
        return None
    return "".join(pieces).encode().decode("unicode_escape")


def _blocks(text):
    """(macro, first argument, variable, body) of every registration block in TEXT (from `_code`)."""
    found = []
    for m in _BLOCK.finditer(text):
        brace = m.end() - 1
        found.append((m.group(1), m.group(2), m.group(3), text[brace + 1 : _closing(text, brace, "{", "}")]))
    return found


def _defs(body, var):
    """The argument lists of VAR.def(...) calls in BODY."""
    calls = []
    for m in re.finditer(rf"\b{re.escape(var)}\s*\.\s*def\s*\(", body):
        paren = m.end() - 1
        calls.append(_split(body[paren + 1 : _closing(body, paren, "(", ")")]))
    return calls


def operators(source, module, where):
    """The operators defined by SOURCE (binding text of one extension module): schemas from library blocks,
    functions from PYBIND11_MODULE. WHERE names the source in errors."""
    text = _code(source)
    ops = []
    for macro, first, var, body in _blocks(text):
        if "IMPL" in macro:
            continue
        if macro == "PYBIND11_MODULE":
            if first != "TORCH_EXTENSION_NAME":
                raise PackagingError(
                    f"{where}: PYBIND11_MODULE({first}, ...) names its module itself; write "
                    f"PYBIND11_MODULE(TORCH_EXTENSION_NAME, {var}) so the package can name it"
                )
            for args in _defs(body, var):
                ops.append(_pybind_op(args, text, module, where))
        elif "LIBRARY" in macro:
            if first != "KS_NAMESPACE":
                raise PackagingError(
                    f"{where}: {macro}({first}, ...) registers operators under its own namespace "
                    f"`{first}`; every package needs a namespace of its own: write "
                    f"{macro}(KS_NAMESPACE, {var}) in a native workspace's binding.cpp"
                )
            for args in _defs(body, var):
                ops.append(_library_op(args, text, where))
    if not ops:
        raise PackagingError(
            f"{where}: no operator found; bind functions in PYBIND11_MODULE(TORCH_EXTENSION_NAME, "
            f"m) or define schemas in STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) or "
            f"TORCH_LIBRARY(KS_NAMESPACE, m)"
        )
    seen = {}
    for op in ops:
        if seen.setdefault(op.full_name, op) is not op:
            raise PackagingError(f"{where}: `{op.full_name}` is defined twice; give each operator its own name")
    return ops


def _library_op(args, text, where):
    literal = _string_literal(args[0]) if args else None
    if literal is None:
        raise PackagingError(f"{where}: def({', '.join(args)}) does not start with a string literal")
    if "(" in literal:
        return _schema_op(literal, where)
    # torch infers the schema from the C++ function: no argument is declared mutated.
    name, params, returns = _typed(args, text, where)
    return Op(name, params, returns, schema=_schema_text(name, params, returns, []))


def _pybind_op(args, text, module, where):
    name, params, returns = _typed(args, text, where)
    # A function that returns nothing works by writing into its tensor arguments: declare them all mutated.
    mutates = [p.name for p in params if p.type == "torch.Tensor"] if not returns else []
    return Op(
        name,
        params,
        returns,
        function=name,
        module=module,
        mutates=mutates,
        schema=_schema_text(name, params, returns, mutates),
    )


def _schema_op(schema, where):
    import torch

    try:
        parsed = torch._C.parse_schema(f"ks::{schema}")
    except RuntimeError as exc:
        raise PackagingError(f"{where}: the schema {schema!r} does not parse: {exc}") from None
    params = [
        Param(
            a.name,
            _SCHEMA_TYPES.get(str(a.type), str(a.type)),
            repr(a.default_value) if a.has_default_value() else None,
            a.kwarg_only,
        )
        for a in parsed.arguments
    ]
    returns = [_SCHEMA_TYPES.get(str(r.type), str(r.type)) for r in parsed.returns]
    mutates = [a.name for a in parsed.arguments if a.alias_info is not None and a.alias_info.is_write]
    return Op(
        parsed.name.split("::", 1)[1], params, returns, overload=parsed.overload_name, mutates=mutates, schema=schema
    )


def _typed(args, text, where):
    """(name, params, returns) of def("name", function, ...): typed from the C++ declaration of the function."""
    name = _string_literal(args[0]) if args else None
    if not name or not name.isidentifier() or len(args) < 2:
        raise PackagingError(
            f'{where}: cannot read the binding def({", ".join(args)}); bind a named function: m.def("name", &function)'
        )
    ref = re.sub(r"^torch::wrap_pybind_function\s*\((.*)\)$", r"\1", args[1].strip(), flags=re.S).strip()
    ref = ref.lstrip("&").strip()
    if not re.fullmatch(r"[A-Za-z_][\w:]*", ref):
        raise PackagingError(
            f"{where}: `{name}` is bound to `{ref[:60]}`; bind a named C++ function instead "
            f"(lambdas and overload casts cannot be typed for torch.library)"
        )
    ret, params = _declaration(text, ref.split("::")[-1], where)
    return name, [_param(p, i, name, where) for i, p in enumerate(params)], _returns(ret, name, where)


def _declaration(text, function, where):
    """(return type text, [parameter texts]) of the first declaration or definition of FUNCTION."""
    for m in re.finditer(rf"(?<![\w.>:]){re.escape(function)}\s*\(", text):
        paren = m.end() - 1
        close = _closing(text, paren, "(", ")")
        after = re.match(r"\s*(?:const\s*|noexcept\s*)*([{;])", text[close + 1 :])
        if not after:
            continue
        before = [t for t in re.split(r"[;{}()]", text[: m.start()])[-1].split() if t not in _SPECIFIERS]
        if not before or before[0] in _NOT_A_RETURN_TYPE or not re.fullmatch(r"[\w:<>,\s&]+", " ".join(before)):
            continue
        params = _split(text[paren + 1 : close])
        return " ".join(before), [p for p in params if p and p != "void"]
    raise PackagingError(
        f"{where}: no C++ declaration of `{function}` found; declare it in the binding's "
        f"sources (for load_inline: in cpp_sources)"
    )


def _normalize(ctype):
    ctype = re.sub(r"\bconst\b|&|\bstruct\b", " ", ctype)
    ctype = re.sub(r"\s*(::|<|,)\s*", r"\1", ctype.strip())
    ctype = re.sub(r"\s+>", ">", ctype)
    return re.sub(r"\s+", " ", ctype)


def _annotation(ctype, function, where):
    ctype = _normalize(ctype)
    inner = re.fullmatch(r"(?:std|c10|at|torch)::optional<(.+)>", ctype)
    if inner:
        return f"Optional[{_annotation(inner.group(1), function, where)}]"
    inner = re.fullmatch(r"std::vector<(.+)>|(?:c10|at|torch)::ArrayRef<(.+)>", ctype)
    if inner:
        return f"list[{_annotation(inner.group(1) or inner.group(2), function, where)}]"
    if ctype in _TENSOR:
        return "torch.Tensor"
    squashed = ctype.replace(" ", "")
    if squashed in _SCALARS:
        return _SCALARS[squashed]
    if ctype in _LISTS:
        return _LISTS[ctype]
    raise PackagingError(
        f"{where}: `{function}` uses the C++ type `{ctype}`, which has no torch.library "
        f"equivalent; use torch::Tensor, int64_t, double, bool, std::string, "
        f"std::vector<...> or std::optional<...>"
    )


def _param(text, index, function, where):
    text = _split(text, "=")[0]
    if "*" in text:
        raise PackagingError(
            f"{where}: `{function}` takes a raw pointer ({text.strip()}); bind a function of tensors and scalars"
        )
    tokens = _split(_normalize(text), " ")
    name = f"arg{index}"
    if len(tokens) > 1 and tokens[-1].isidentifier() and tokens[-1] not in _BUILTIN_WORDS:
        name = tokens.pop()
    if keyword.iskeyword(name):
        name += "_"
    return Param(name, _annotation(" ".join(tokens), function, where))


def _returns(ret, function, where):
    ctype = _normalize(ret)
    if ctype == "void":
        return []
    inner = re.fullmatch(r"std::(?:tuple|pair)<(.+)>", ctype)
    if inner:
        return [_annotation(t, function, where) for t in _split(inner.group(1))]
    return [_annotation(ctype, function, where)]


def _schema_type(annotation):
    inner = re.fullmatch(r"Optional\[(.+)\]", annotation)
    if inner:
        return _schema_type(inner.group(1)) + "?"
    inner = re.fullmatch(r"list\[(.+)\]", annotation)
    if inner:
        return _schema_type(inner.group(1)) + "[]"
    return _SCHEMA_OF[annotation]


def _schema_text(name, params, returns, mutates):
    """The schema torch.library gives a function of these types (for the README)."""
    aliases = {n: f"({chr(ord('a') + i)}!)" for i, n in enumerate(mutates)}
    args = ", ".join(f"{_schema_type(p.type)}{aliases.get(p.name, '')} {p.name}" for p in params)
    outs = [_schema_type(r) for r in returns]
    out = outs[0] if len(outs) == 1 else f"({', '.join(outs)})"
    return f"{name}({args}) -> {out}"
