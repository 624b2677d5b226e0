"""Host paths taken out of what users are shown of jailed processes' output (logs, tracebacks, compiler errors).

A user's own files become relative to their folder (`workspace/kernels/add.cu:12`); the host's layout (the
worker's caches, where Python, the project and the CUDA toolkit live, home folders, other evaluations' folders)
is named by what it is (`<site-packages>/torch/nn/modules/module.py`), so an error stays readable and tells
nothing of the machine or of other users.
"""

import functools
import os
import re
import sys
from pathlib import Path

import sandbox
from sandbox import settings


@functools.lru_cache(maxsize=1)
def _rules():
    """(compiled pattern, replacement) pairs, most specific first."""
    work = re.escape(str(settings.work_root()))
    # A jail's own folder: its files relative, the folder itself '.'; the folders root, by name.
    own = re.compile(work + r"/[A-Za-z0-9_.-]+(/|(?![A-Za-z0-9_.-]))")
    rules = [(own, lambda m: "" if m.group(1) == "/" else "."), (re.compile(work + r"\b/?"), "<sandbox>/")]
    named = {}
    for entry in sys.path:
        if entry.endswith(("site-packages", "dist-packages")):
            named[entry] = "<site-packages>"
    named[str(settings.cache_dir())] = "<cache>"
    named[str(Path(sandbox.__file__).resolve().parent.parent)] = "<kernel-studio>"
    for prefix in (sys.prefix, sys.base_prefix):
        named[prefix] = "<python>"
    for name in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(name):
            named[os.environ[name]] = "<cuda>"
    home = os.path.expanduser("~")
    if home not in ("/", ""):
        named[home] = "~"
    for path in sorted(named, key=len, reverse=True):  # longest first: site-packages before the prefix holding it
        if path and path != "/":
            rules.append((re.compile(re.escape(path.rstrip("/")) + r"(?=/|\b)"), named[path]))
    return rules


def scrub(text):
    """TEXT with host paths replaced (see the module's docstring)."""
    if not text:
        return text
    for pattern, replacement in _rules():
        text = pattern.sub(replacement, text)
    return text
