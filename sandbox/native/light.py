"""Light torch headers for load_inline's C++ units, kept only where the compiler shows that they change nothing.

Why: a unit that includes torch/extension.h costs about 7.5 s of g++ on one core even with the header precompiled.
GCC's precompiled header saves the parsing only: the templates its inline functions use are instantiated again in
every unit (about 5 s, `phase lang. deferred` in -ftime-report), and pybind11's functions are generated again (about
2 s). A unit that includes only what it uses costs a third of that: torch/types.h (ks_types.h) for torch code, plus
the type casters and torch::wrap_pybind_function (ks_bind.h) for a unit holding the pybind11 module.

How, per unit, in one ninja run beside the kernels: the unit is compiled against the light header (precompiled) and,
at the same time, parsed to its end twice, against torch/extension.h and against the light header, by `-fsyntax-only`
stopped by a failing static_assert appended to it: that is before GCC instantiates the headers' pending templates, so
each parse takes a fraction of a second. Both parses dump the functions they finished (-fdump-tree-original, as text
and raw). Where every function of the full parse is also in the light parse, with the same expressions, conversions
and callees (by mangled name), the unit's code means the same under both headers and the light object is linked.
Anything else (the light compile fails, a parse stops at an error of its own, a dump differs) compiles the unit
against the full precompiled header, as before, whose errors are the ones a user sees.

What the parse cannot see is what GCC does at a unit's end: templates instantiated there and namespace-scope dynamic
initializers. A unit that defines templates (or generic lambdas) or namespace-scope variables with non-constant
initializers is not eligible; for the library's templates it instantiates, the light headers hold every type
caster and the same template definitions as torch/extension.h.
"""

import collections
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from sandbox.native.cuda_split import Unsplittable, _closing, _mask

HEADER_DIR = Path(__file__).parent
MAIN = "ks_torch.h"
# The precompiled headers of load_inline's units (sandbox.native.build.precompiled_headers): name -> source.
HEADERS = {name: HEADER_DIR / name for name in ("ks_torch.h", "ks_types.h", "ks_bind.h", "ks_module.h")}


def pch_sources():
    """The headers load_inline's units are precompiled against: all of HEADERS with the light headers on
    (KS_INLINE_LIGHT_HEADERS), else the full one alone, so that no header is precompiled that no unit would use."""
    from sandbox import settings

    return dict(HEADERS) if settings.INLINE_LIGHT_HEADERS else {MAIN: HEADERS[MAIN]}


# The kinds of unit (eligible()) and their light headers.
LIGHT = {"types": "ks_types.h", "bind": "ks_bind.h", "module": "ks_module.h"}
CUT = 'static_assert(false, "ks: end of the unit");'
CUT_MESSAGE = "ks: end of the unit"
_EXTENSION = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]torch/extension\.h[>"].*$', re.M)
# Umbrella headers beyond the light ones: a unit including them gains nothing.
_HEAVY = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]torch/(all|torch|python|nn|optim|data|serialize|jit)\.h[>"]', re.M)
_BINDING = re.compile(r"\bPYBIND11_\w+|\bpybind11\b|\bpy::|\bTORCH_LIBRARY\w*")
_PARAM_AUTO = re.compile(r"([(,])\s*(?:(?:const|volatile)\s+)*auto\b")
_NOT_PARAMS = {"for", "if", "while", "switch", "catch", "decltype", "sizeof", "alignof", "noexcept", "static_cast"}


@dataclass
class Unit:
    """A C++ unit of torch's build file that pass 1 also compiles against a light header."""

    source: str  # its path as torch's build file names it
    obj: str  # its object there
    kind: str  # "types" or "bind"
    stem: str  # what the files pass 1 writes for it are named after


def eligible(text):
    """(kind, "") where TEXT (a unit opening with torch/extension.h) may be compiled against a light header, else
    (None, why)."""
    if _HEAVY.search(text):
        return None, "it includes torch's C++ frontend or Python headers itself"
    try:
        masked = _mask(text)
    except Unsplittable as why:
        return None, str(why)
    if re.search(r"\btemplate\b", masked):
        return None, "it defines templates (instantiated at the unit's end, past what the check sees)"
    for match in _PARAM_AUTO.finditer(masked):
        before = masked[: match.start(1)].rstrip()
        word = re.search(r"(\w+)$", before)
        if match.group(1) == "," or not word or word.group(1) not in _NOT_PARAMS:
            return None, "it has a generic lambda or an `auto` parameter (a template)"
    if _dynamic_initializer(masked):
        return None, "a namespace-scope variable is initialized at load time (done at the unit's end)"
    if not _BINDING.search(masked):
        return "types", ""
    return ("module" if _declarations_only(masked) else "bind"), ""


def _declarations_only(masked):
    """Whether MASKED code defines no function but its pybind11 module: load_inline's main.cpp for a `.cu`."""
    masked = re.sub(r"^[ \t]*#.*$", "", masked, flags=re.M)
    at = 0
    while True:
        brace = masked.find("{", at)
        if brace < 0:
            return True
        head = masked[at:brace].split(";")[-1]
        if not re.match(r"\s*PYBIND11_MODULE\s*\(", head):
            return False
        try:
            at = _closing(masked, brace) + 1
        except Unsplittable:
            return False


def _dynamic_initializer(masked):
    """Whether MASKED code (comments and literals blanked) has a namespace-scope variable whose initializer may run
    code: a call, a qualified name or braces (`T x = f();`, `T x{...}`), or parentheses holding a number
    (`T x(1);`, not a prototype). Constexpr variables are constant-initialized."""
    masked = re.sub(r"^[ \t]*#.*$", "", masked, flags=re.M)
    statement, i, n, depth = [], 0, len(masked), 0
    while i < n:
        c = masked[i]
        depth += (c in "([") - (c in ")]")
        if c == "{" and depth == 0:
            head = " ".join("".join(statement).split())
            statement = []
            if re.match(r"(inline )?namespace\b|extern$", head):  # `extern "C" {` once its literal is blanked
                i += 1
                continue
            try:
                i = _closing(masked, i) + 1
            except Unsplittable:
                return True
            if re.match(r"(typedef )?(struct|class|union|enum)\b", head):
                rest = re.match(r"[^;{}]*;", masked[i:])  # `struct S {...} s;`: declarators, default-initialized
                i += rest.end() if rest else 0
            elif "(" not in head and head and not head.startswith(("constexpr", "static constexpr")):
                return True  # `T x{...}` or `T x = {...}`
            continue
        if c == "}" and depth == 0:
            statement = []
            i += 1
            continue
        if c == ";" and depth == 0:
            head = " ".join("".join(statement).split())
            statement = []
            i += 1
            if not head or re.match(
                r"(using|typedef|static_assert|template|friend|extern|constexpr|static constexpr)\b", head
            ):
                continue
            flat = _outside_brackets(head)
            if "=" in flat:
                if re.search(r"[({]|::", head.split("=", 1)[1]):
                    return True
            elif _literal_argument(head):
                return True
            continue
        statement.append(c)
        i += 1
    return False


def _literal_argument(head):
    """Whether the parentheses of a declaration hold a literal argument (`Table t(16);`), not parameters."""
    match = re.search(r"\(([^()]*)\)", head)
    return bool(match) and any(re.match(r"\s*[-+]?\.?\d", arg) for arg in match.group(1).split(","))


def _outside_brackets(text):
    out, depth = [], 0
    for c in text:
        if c in "([<":
            depth += 1
        elif c in ")]>":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(c)
    return "".join(out)


def light_text(text, path):
    """TEXT compiled against a light header: its torch/extension.h includes blanked (lines keep their numbers) and
    `__FILE__` the same as where it is written at PATH."""
    return f'#line 1 "{_c_string(path)}"\n' + _EXTENSION.sub("", text)


def cut_text(text, path):
    """TEXT followed by the static_assert that stops GCC once it has parsed it all."""
    return f'#line 1 "{_c_string(path)}"\n{text}\n{CUT}\n'


def _c_string(text):
    return str(text).replace("\\", "\\\\").replace('"', '\\"')


def plan(folder, ninja, texts, headers):
    """Write pass 1 into FOLDER for the units of NINJA (torch's build file, already through the full precompiled
    header) whose TEXTS ({source as the build file names it: text}) are eligible: their light sources, their cut
    sources, and ks_light.ninja (which includes build.ninja). HEADERS: {name of HEADERS: precompiled header path}.
    Returns ([Unit], {source: why not}) ."""
    folder = Path(folder)
    units, skipped, rules = [], {}, []
    for index, (source, obj) in enumerate(compiled(ninja)):
        if source not in texts:
            continue
        kind, why = eligible(texts[source])
        if kind is not None and LIGHT[kind] not in headers:
            kind, why = None, f"{LIGHT[kind]} did not precompile here"
        if kind is None:
            skipped[source] = why
            continue
        stem = f"ks_light_{index}"
        unit = Unit(source, obj, kind, stem)
        original = source.replace("$ ", " ")
        (folder / f"{stem}.light.cpp").write_text(light_text(texts[source], original))
        (folder / f"{stem}.full.cut.cpp").write_text(cut_text(texts[source], original))
        (folder / f"{stem}.light.cut.cpp").write_text(cut_text(light_text(texts[source], original), original))
        light = shlex.quote(str(headers[LIGHT[kind]]))
        full = shlex.quote(str(headers[MAIN]))
        rules += [
            f"build {stem}.light.o: ks_light {stem}.light.cpp\n  ks_pch = -include {light}",
            f"build {stem}.full.tree: ks_cut {stem}.full.cut.cpp\n  ks_pch = -include {full}",
            f"build {stem}.full.raw: ks_cut {stem}.full.cut.cpp\n  ks_pch = -include {full}\n  ks_dump = -raw",
            f"build {stem}.light.tree: ks_cut {stem}.light.cut.cpp\n  ks_pch = -include {light}",
            f"build {stem}.light.raw: ks_cut {stem}.light.cut.cpp\n  ks_pch = -include {light}\n  ks_dump = -raw",
        ]
        units.append(unit)
    if units:
        text = [
            "include build.ninja",
            "rule ks_light\n  command = $cxx $cflags $ks_pch -c $in -o $out $post_cflags",
            # The parse fails by design (the static_assert); what it dumped and said is read afterwards.
            "rule ks_cut\n  command = $cxx $cflags $ks_pch -fsyntax-only -Wfatal-errors "
            "-fdump-tree-original$ks_dump=$out $in $post_cflags > $out.log 2>&1; test -e $out || : > $out",
            *rules,
        ]
        (folder / "ks_light.ninja").write_text("\n".join(text) + "\n")
    return units, skipped


def targets(units, ninja, kernels):
    """What pass 1 builds: each unit's light object and parses, and with KERNELS the build file's CUDA objects."""
    out = []
    for unit in units:
        out += [f"{unit.stem}.{x}" for x in ("light.o", "full.tree", "full.raw", "light.tree", "light.raw")]
    if kernels:
        out += re.findall(r"^build (\S+): cuda_compile ", ninja, re.M)
    return out


def settle(folder, ninja, units):
    """After pass 1: each unit whose light object is kept takes its object's place, and its build statement leaves
    NINJA. Returns (NINJA for pass 2, {source: light kind, or "full: why"})."""
    folder = Path(folder)
    decided, kept = {}, set()
    for unit in units:
        why = verdict(folder, unit)
        if why:
            decided[unit.source] = f"full: {why}"
            continue
        (folder / f"{unit.stem}.light.o").replace(folder / unit.obj)
        decided[unit.source] = unit.kind
        kept.add(unit.obj)
    out, skip = [], False
    for line in ninja.splitlines():
        if skip and line.startswith("  "):
            continue
        match = re.match(r"build (\S+): compile ", line)
        skip = bool(match and match.group(1) in kept)
        if not skip:
            out.append(line)
    return "\n".join(out) + "\n", decided


def verdict(folder, unit):
    """ "" where UNIT's light object may be linked, else why not."""
    folder = Path(folder)
    if not (folder / f"{unit.stem}.light.o").exists():
        return "it does not compile against the light header"
    dumps = {}
    for side in ("full", "light"):
        for form in ("tree", "raw"):
            path = folder / f"{unit.stem}.{side}.{form}"
            said = _read(path.with_name(path.name + ".log"))
            errors = [line for line in said.splitlines() if " error: " in line or line.startswith("error:")]
            if len(errors) != 1 or CUT_MESSAGE not in errors[0]:
                return (
                    f"its parse against {'torch/extension.h' if side == 'full' else 'the light header'} stopped early"
                )
            dumps[side, form] = _read(path)
    return difference(dumps["full", "tree"], dumps["full", "raw"], dumps["light", "tree"], dumps["light", "raw"])


def _read(path):
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def difference(full_tree, full_raw, light_tree, light_raw):
    """ "" where every function of the full parse is in the light one (same text, same callees), else what differs."""
    full, light = _paired(full_tree, full_raw), _paired(light_tree, light_raw)
    if full is None or light is None:
        return "GCC's dumps of the parses do not match up"
    groups = collections.defaultdict(lambda: (collections.Counter(), collections.Counter()))
    heads = {}
    for side, dumped in ((0, full), (1, light)):
        for text, raw in dumped:
            key = _normalized(text)
            groups[key][side][raw] += 1
            heads.setdefault(key, text.splitlines()[0])
    for key, (mine, theirs) in groups.items():
        same = mine & theirs  # the same raw dump: the same callees
        mine, theirs = mine - same, theirs - same
        if not mine:
            continue
        wanted = collections.Counter(_callees(raw) for raw in mine.elements())
        if wanted - collections.Counter(_callees(raw) for raw in theirs.elements()):
            name = heads[key].removeprefix(";; Function ").strip()
            return f"{name} means something else against the light header"
    return ""


def _paired(tree, raw):
    """[(text, raw text)] of each function a parse dumped; None where its two dumps list different functions."""
    texts, raws = _blocks(tree), _blocks(raw)
    if [t.splitlines()[0] for t in texts] != [r.splitlines()[0] for r in raws]:
        return None
    return list(zip(texts, raws))


def _blocks(dump):
    return [b.strip() for b in re.split(r"\n(?=;; Function )", dump) if b.startswith(";; Function ")]


def _normalized(text):
    # Numbers GCC gives temporaries, anonymous types and types by address: they count what came before.
    text = re.sub(r"\bD\.\d+", "D.#", text)
    text = re.sub(r"<T[0-9a-f]+>", "<T#>", text)
    return re.sub(r"\b_anon_\d+", "_anon_#", text)


# Edges of GCC's raw dump that lead from an expression into types and declarations' structure, not into code.
_STRUCTURE = {
    "type", "flds", "binf", "scpe", "chain", "name", "mngl", "size", "algn", "unql", "ptd", "refd", "retn", "prms",
    "args", "argt", "orig", "min", "max", "elts", "domn", "vfld", "csts", "clas", "base", "body", "tmpl",
}  # fmt: skip
_DECLS = {"function_decl", "var_decl", "template_decl", "const_decl"}


_EDGE = re.compile(r"(\w+)(?: \d+)?\s*:\s*@(\d+)")


def _callees(block):
    """The functions and variables (by mangled name, else by name) the code of one raw-dumped function reaches."""
    found, seen, stack = [], set(), ["1"]
    while stack:
        at = stack.pop()
        if at in seen:
            continue
        seen.add(at)
        kind, fields = _node(block, at)
        if kind in _DECLS:
            mangled = re.search(r"\bmngl: @(\d+)", fields)
            if mangled:
                found.append(_string(block, mangled.group(1)))
            elif kind != "var_decl" or _node(block, _edge(fields, "scpe"))[0] in ("namespace_decl", ""):
                # (a local variable: its name says nothing)
                # Not mangled yet: its name and where it is declared tell one declaration from another.
                name = re.search(r"\bname: @(\d+)", fields)
                where = re.search(r"\bsrcp: (\S+)", fields)
                found.append(f"{_string(block, name.group(1)) if name else ''} at {where.group(1) if where else '?'}")
            continue
        stack += [target for key, target in _EDGE.findall(fields) if key not in _STRUCTURE]
    return tuple(sorted(found))


def _edge(fields, key):
    match = re.search(rf"\b{key}\s*: @(\d+)", fields)
    return match.group(1) if match else ""


def _string(block, at):
    """The text of identifier node @AT."""
    kind, text = _node(block, at)
    match = re.search(r"strg: (.*?)\s+lngt:", text, re.S)
    return match.group(1) if match else f"@{kind}"


def _node(block, at):
    """(kind, text) of node @AT of a raw dump (its line and the lines continuing it)."""
    begin = block.find(f"\n@{at} ")
    if begin < 0:
        return "", ""
    end = block.find("\n@", begin + 1)
    text = block[begin + 1 : end if end >= 0 else None]
    return text.split(None, 2)[1], text


def compiled(ninja):
    """(source, object) of each C++ compile statement of torch's build file."""
    return [(m.group(2), m.group(1)) for m in re.finditer(r"^build (\S+): compile (.*)$", ninja, re.M)]
