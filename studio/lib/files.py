"""Checks on a workspace's files sent from the editor: the paths the sandbox builds, text only, within a size."""

import posixpath

TOP_FILES = ("model_new.py", "binding.cpp")
KERNEL_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".c", ".h", ".hpp")


class BadFiles(ValueError):
    """The edited files cannot be evaluated as sent; the message says what to change."""


def check_files(files, limit_bytes):
    """FILES ({relative path: text}) as the sandbox will see them, or BadFiles naming the first problem."""
    if not isinstance(files, dict) or not files:
        raise BadFiles("send the workspace as {path: text} with at least model_new.py")
    total = 0
    for path, text in files.items():
        if not isinstance(path, str) or not isinstance(text, str):
            raise BadFiles("every file needs a path and a text")
        normal = posixpath.normpath(path)
        if path != normal or path.startswith("/") or ".." in path.split("/"):
            raise BadFiles(f"{path!r} is not a plain relative path (no '..', no leading '/')")
        if path not in TOP_FILES and not (path.startswith("kernels/") and path.endswith(KERNEL_SUFFIXES)):
            raise BadFiles(
                f"{path!r} is not a solution file: use model_new.py, binding.cpp or "
                f"kernels/NAME with one of {', '.join(KERNEL_SUFFIXES)}"
            )
        if "\x00" in text:
            raise BadFiles(f"{path} holds a NUL character: files must be text")
        try:
            total += len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise BadFiles(f"{path} is not valid Unicode text (a lone surrogate)") from None
    if "model_new.py" not in files:
        raise BadFiles("the workspace needs model_new.py (it defines ModelNew)")
    if total > limit_bytes:
        raise BadFiles(f"the files hold {total} bytes; the limit is {limit_bytes} bytes")
    return dict(sorted(files.items()))
