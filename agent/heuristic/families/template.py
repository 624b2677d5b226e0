"""The kernel families' template files: CUDA and C++ sources cut into named sections, with `${field}` blanks."""

import functools
import string
from pathlib import Path

FOLDER = Path(__file__).with_name("templates")
# A line `//@ name` starts section NAME of a template file; the text before a file's first one describes the file.
MARK = "//@ "


class TemplateError(Exception):
    """A template file, section or field that the code filling it does not match."""


@functools.lru_cache(maxsize=None)
def sections(file):
    """{name: text} of the sections of template FILE (in templates/): each the lines after its mark, up to the next."""
    path = FOLDER / file
    if not path.exists():
        raise TemplateError(f"no template file {path}")
    out, name = {}, None
    for line in path.read_text().splitlines(keepends=True):
        if line.startswith(MARK):
            name = line[len(MARK) :].strip()
            if name in out:
                raise TemplateError(f"{file}: section {name!r} appears twice")
            out[name] = ""
        elif name is not None:
            out[name] += line
    for name, text in out.items():
        if not string.Template(text).is_valid():
            raise TemplateError(f"{file}, section {name!r}: a `$` that is not a ${{field}} blank")
    return out


def fields(file, section):
    """The names of the blanks of SECTION of template FILE."""
    return set(string.Template(_section(file, section)).get_identifiers())


def render(file, section, **values):
    """SECTION of template FILE with each ${field} replaced by str(VALUES[field]): every blank must be given a value
    and every value must fill a blank, so a template and the code filling it cannot drift apart silently."""
    text = _section(file, section)
    blanks = fields(file, section)
    if blanks != values.keys():
        missing, unused = sorted(blanks - values.keys()), sorted(values.keys() - blanks)
        raise TemplateError(f"{file}, section {section!r}: no value for {missing}, no blank for {unused}")
    return string.Template(text).substitute({k: str(v) for k, v in values.items()})


def snippet(file, section, **values):
    """SECTION of template FILE rendered, without its first line's indentation and its last newline: a piece of a
    kernel that a `${field}` of another section places, its lines after the first indented as they will sit."""
    return render(file, section, **values).strip()


def as_format(file, section):
    """SECTION of template FILE as a str.format string of the same fields, for callers that format it themselves."""
    marks = {name: f"\x00{name}\x00" for name in fields(file, section)}
    text = string.Template(_section(file, section)).substitute(marks).replace("{", "{{").replace("}", "}}")
    for name, mark in marks.items():
        text = text.replace(mark, "{" + name + "}")
    return text


def _section(file, section):
    try:
        return sections(file)[section]
    except KeyError:
        raise TemplateError(f"{file} has no section {section!r} (it has {sorted(sections(file))})") from None
