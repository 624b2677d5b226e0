"""JSON Lines files: whole records read back, one record appended and synced, a whole file replaced atomically."""

import json
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)


class JsonlError(ValueError):
    """A line of a JSONL file is not JSON; the message names the file and line to fix."""


def read_jsonl(path, skip_bad=False, appending=True):
    """The records of PATH's lines ([] when there is no file); see iter_jsonl."""
    return [record for _, record in iter_jsonl(path, skip_bad, appending)]


def iter_jsonl(path, skip_bad=False, appending=True):
    """(line number, record) of PATH's lines (none when there is no file), blank lines ignored.

    APPENDING (the default): a writer may be at the end of the file or have crashed there, so a last line without
    its newline that is not JSON is a write cut short and left out. Any other line that is not JSON is a
    JsonlError naming it, or with SKIP_BAD a warning."""
    path = Path(path)
    if not path.is_file():
        return
    lines = path.read_bytes().split(b"\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            if appending and number == len(lines):
                log.debug("%s:%d: a cut last line left out", path, number)
                continue
            if not skip_bad:
                raise JsonlError(f"{path}:{number} is not JSON ({exc}); fix or remove that line") from None
            log.warning("%s:%d: skipped a line that is not JSON (%s)", path, number, exc)
            continue
        yield number, record


def append_jsonl(path, record):
    """Append RECORD to PATH as one line, in a single write to an append-only descriptor, then synced: concurrent
    appenders never interleave, and a crash loses at most this record."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def write_jsonl(path, records):
    """Replace PATH by RECORDS, one per line, atomically: readers see the old file or the new one, never a part."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(record) + "\n" for record in records)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def repair_jsonl(path):
    """End PATH with a whole line before appending to it again: a last line cut short by a crash is completed
    with its newline when it is whole JSON and removed otherwise. Only the file's writer may call it: a reader
    would cut the line another process is writing."""
    path = Path(path)
    if not path.is_file():
        return
    raw = path.read_bytes()
    if not raw or raw.endswith(b"\n"):
        return
    body, _, tail = raw.rpartition(b"\n")
    try:
        json.loads(tail)
    except ValueError:
        with open(path, "r+b") as fh:
            fh.truncate(len(body) + 1 if body else 0)
        log.warning("%s: removed a last line cut short by a crash", path)
        return
    with open(path, "ab") as fh:
        fh.write(b"\n")
