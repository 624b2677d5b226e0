"""Reading a solution's Python statically: its load_inline sources, and ModelNew's module rewritten to use the
package's operators instead of building anything at import."""

import ast
import inspect
from dataclasses import dataclass

from sandbox.errors import PackagingError

OPS_NAME = "_ks_ops"
OPS_IMPORT = f"from . import ops as {OPS_NAME}  # the package's operators, registered with torch.library\n"
_CPP_EXTENSION = "torch.utils.cpp_extension"
# The load_inline arguments that shape the package; the others (verbose, build_directory, ...) are left behind.
_READ = (
    "name",
    "cpp_sources",
    "cuda_sources",
    "sycl_sources",
    "functions",
    "extra_cflags",
    "extra_cuda_cflags",
    "extra_ldflags",
    "extra_include_paths",
    "no_implicit_headers",
    "with_pytorch_error_handling",
)
_FORMS = (
    "Write it as a string literal or a module-level constant: concatenations with + and f-strings of "
    "constants are fine, anything computed when the module runs is not."
)


@dataclass
class InlineCall:
    """One load_inline(...) call with every argument the package needs, read without running anything."""

    name: str
    cpp_sources: list
    cuda_sources: list
    functions: list | None
    extra_cflags: list
    extra_cuda_cflags: list
    extra_ldflags: list
    extra_include_paths: list
    implicit_headers: bool
    error_handling: bool
    line: int

    def files(self):
        """The translation units exactly as load_inline writes them: main.cpp and, with CUDA sources, cuda.cu."""
        cpp = (["#include <torch/extension.h>"] if self.implicit_headers else []) + list(self.cpp_sources)
        if self.functions is not None:
            wrap = "torch::wrap_pybind_function({0})" if self.error_handling else "{0}"
            cpp += ["PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {"]
            cpp += [f'm.def("{f}", {wrap.format(f)}, "{f}");' for f in self.functions] + ["}"]
        files = {"main.cpp": "\n".join(cpp)}
        if self.cuda_sources:
            headers = ["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"]
            files["cuda.cu"] = "\n".join((headers if self.implicit_headers else []) + list(self.cuda_sources))
        return files


def parse(text, path):
    try:
        return ast.parse(text, str(path))
    except SyntaxError as exc:
        raise PackagingError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None


def _builder_names(tree):
    """Local names of load_inline and load from torch.utils.cpp_extension, and of load_extension from sandbox."""
    names = {"load_inline": "load_inline", "load_extension": "load_extension"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in (
            _CPP_EXTENSION,
            "sandbox.native",
            "sandbox.native.build",
        ):
            for alias in node.names:
                if alias.name in ("load_inline", "load", "load_extension"):
                    names[alias.asname or alias.name] = alias.name
    return names


def _builder(call, names):
    func = call.func
    if isinstance(func, ast.Name):
        return names.get(func.id)
    if isinstance(func, ast.Attribute) and func.attr in ("load_inline", "load_extension"):
        return func.attr
    if isinstance(func, ast.Attribute) and func.attr == "load" and ast.unparse(func.value).endswith("cpp_extension"):
        return "load"
    return None


def builder_calls(tree, path):
    """[(kind, call)] for every load_inline / load_extension call; a file-based load() cannot be packaged."""
    names = _builder_names(tree)
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (kind := _builder(node, names)):
            if kind == "load":
                raise PackagingError(
                    f"{path}:{node.lineno}: the extension is built from files with "
                    f"torch.utils.cpp_extension.load; packaging reads sources from the solution "
                    f"itself: pass them to load_inline, or make the solution a native workspace"
                )
            calls.append((kind, node))
    return sorted(calls, key=lambda kc: (kc[1].lineno, kc[1].col_offset))


class _Constants:
    """Module-level names bound exactly once, by a plain assignment: what a call's arguments may refer to."""

    def __init__(self, tree):
        counts, self.values = {}, {}
        for node in tree.body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, (ast.AnnAssign, ast.AugAssign))
                else []
            )
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        counts[name.id] = counts.get(name.id, 0) + 1
                        if not isinstance(node, ast.AugAssign) and target is name and node.value is not None:
                            self.values[name.id] = node.value
        self.values = {k: v for k, v in self.values.items() if counts[k] == 1}
        self.reassigned = {k for k, n in counts.items() if n > 1}
        self.resolving = set()

    def value(self, node, what, path):
        """The Python value of NODE if it is known without running the module; else a PackagingError."""
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
            return node.value
        if isinstance(node, ast.Name) and node.id in self.values and node.id not in self.resolving:
            self.resolving.add(node.id)
            try:
                return self.value(self.values[node.id], what, path)
            finally:
                self.resolving.discard(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(node.left, what, path), self.value(node.right, what, path)
            if type(left) is type(right) and isinstance(left, (str, list)):
                return left + right
        if isinstance(node, ast.JoinedStr):
            pieces = [self._piece(part, what, path) for part in node.values]
            if None not in pieces:
                return "".join(pieces)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(item, what, path) for item in node.elts]
        if isinstance(node, ast.Dict) and None not in node.keys:
            pairs = zip(node.keys, node.values, strict=True)
            return {self.value(k, what, path): self.value(v, what, path) for k, v in pairs}
        snippet = ast.unparse(node)
        why = ", assigned more than once" if isinstance(node, ast.Name) and node.id in self.reassigned else ""
        raise PackagingError(
            f"{path}:{node.lineno}: `{what}` of load_inline is computed at run time "
            f"(`{snippet[:80]}{'...' if len(snippet) > 80 else ''}`{why}), so the package cannot "
            f"know its text. {_FORMS}"
        )

    def _piece(self, part, what, path):
        """The text of one f-string part; None for a conversion or format spec (left to run time)."""
        if isinstance(part, ast.Constant):
            return part.value
        if part.conversion == -1 and part.format_spec is None:
            value = self.value(part.value, what, path)
            if isinstance(value, (str, int, float)):
                return str(value)
        return None


def _strings(value, what, call, path):
    value = [] if value is None else [value] if isinstance(value, str) else value
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PackagingError(f"{path}:{call.lineno}: `{what}` of load_inline must be a string or a list of strings")
    return value


def inline_call(call, tree, path, constants=None):
    """The InlineCall of one load_inline(...) node."""
    import torch.utils.cpp_extension as ce

    constants = constants or _Constants(tree)
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        raise PackagingError(
            f"{path}:{call.lineno}: load_inline is called with *args or **kwargs, known only at "
            f"run time; pass each argument by name (name=..., cpp_sources=..., functions=...)"
        )
    try:
        bound = inspect.signature(ce.load_inline).bind(*call.args, **{k.arg: k.value for k in call.keywords})
    except TypeError as exc:
        raise PackagingError(f"{path}:{call.lineno}: load_inline(...) does not match its signature: {exc}") from None
    args = {k: constants.value(v, k, path) for k, v in bound.arguments.items() if k in _READ}
    if args.get("sycl_sources"):
        raise PackagingError(f"{path}:{call.lineno}: SYCL sources cannot be packaged; only C++ and CUDA")
    if not isinstance(args["name"], str) or not args["name"].isidentifier():
        raise PackagingError(f"{path}:{call.lineno}: load_inline's name must be an identifier, not {args['name']!r}")
    functions = args.get("functions")
    if functions is not None:
        functions = list(functions) if isinstance(functions, dict) else _strings(functions, "functions", call, path)
    return InlineCall(
        name=args["name"],
        cpp_sources=_strings(args["cpp_sources"], "cpp_sources", call, path),
        cuda_sources=_strings(args.get("cuda_sources"), "cuda_sources", call, path),
        functions=functions,
        extra_cflags=_strings(args.get("extra_cflags"), "extra_cflags", call, path),
        extra_cuda_cflags=_strings(args.get("extra_cuda_cflags"), "extra_cuda_cflags", call, path),
        extra_ldflags=_strings(args.get("extra_ldflags"), "extra_ldflags", call, path),
        extra_include_paths=_strings(args.get("extra_include_paths"), "extra_include_paths", call, path),
        implicit_headers=not args.get("no_implicit_headers", False),
        error_handling=bool(args.get("with_pytorch_error_handling", True)),
        line=call.lineno,
    )


def inline_calls(text, path):
    """Every load_inline call of an inline solution, in source order."""
    tree = parse(text, path)
    constants = _Constants(tree)
    calls = [
        inline_call(call, tree, path, constants) for kind, call in builder_calls(tree, path) if kind == "load_inline"
    ]
    if not calls:
        raise PackagingError(
            f"{path}: no load_inline call, so there is no C++/CUDA extension to package; "
            f"packages are made from load_inline solutions and native workspaces"
        )
    return calls


def _offsets(data):
    starts, pos = [0], 0
    for line in data.splitlines(keepends=True):
        pos += len(line)
        starts.append(pos)
    return starts


def _sandbox_imports(tree):
    """Import statements of sandbox modules and the names they bind."""
    found, names = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sandbox" and not node.level:
            found.append(node)
            names |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "sandbox" for a in node.names):
            found.append(node)
            names |= {a.asname or a.name.split(".")[0] for a in node.names}
    return found, names


def rewrite_model(text, path):
    """The solution's module with each load_inline / load_extension call replaced by the package's ops module
    and its sandbox imports dropped, so that importing it builds nothing and needs no Kernel Studio."""
    tree = parse(text, path)
    if not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body):
        raise PackagingError(f"{path}: no module-level class ModelNew(nn.Module) to package")
    data = text.encode()
    starts = _offsets(data)

    def span(node, whole_lines=False):
        if whole_lines:
            return starts[node.lineno - 1], starts[node.end_lineno]
        return starts[node.lineno - 1] + node.col_offset, starts[node.end_lineno - 1] + node.end_col_offset

    edits = [(*span(call), OPS_NAME.encode()) for _, call in builder_calls(tree, path)]
    imports, sandbox_names = _sandbox_imports(tree)
    for node in imports:
        at_top = node in tree.body
        edits.append((*span(node, whole_lines=at_top), b"" if at_top else b"pass"))
    edits.append((_import_point(tree, starts, len(data)),) * 2 + (OPS_IMPORT.encode(),))
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        data = data[:start] + new + data[end:]
    rewritten = data.decode()
    used = {n.id for n in ast.walk(parse(rewritten, path)) if isinstance(n, ast.Name)} & sandbox_names
    if used:
        raise PackagingError(
            f"{path}: uses {', '.join(sorted(used))} from Kernel Studio's sandbox beyond "
            f"load_extension; a package cannot depend on the sandbox"
        )
    return rewritten


def _import_point(tree, starts, end):
    """Where the ops import goes: after the imports that open the module (and its docstring)."""
    body = [n for n in tree.body if not _is_preamble(n)]
    leading = []
    for node in body:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            break
        leading.append(node)
    if leading:
        return starts[leading[-1].end_lineno]
    return starts[body[0].lineno - 1] if body else end


def _is_preamble(node):
    docstring = isinstance(node, ast.Expr) and isinstance(getattr(node.value, "value", None), str)
    return docstring or isinstance(node, ast.ImportFrom) and node.module == "__future__"
