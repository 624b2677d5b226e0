"""An evaluation's solutions as data: its `solution.py` files packed into one gzipped JSONL, and unpacked again.

    python -m training.evaluation.archive pack DIR      # DIR/episodes/**/solution.py -> DIR/solutions.jsonl.gz
    python -m training.evaluation.archive list ARCHIVE  # one line per solution: ARM/levelN/NAME
    python -m training.evaluation.archive unpack ARCHIVE [--to DIR] [--names A,B]
                                                        # back to DIR/episodes/ARM/levelN/NAME/solution.py

A stored sweep (bench/results) keeps its solutions without thousands of generated lines in the source tree;
`--retime` reads a solution from the archive when its solution.py is not there.
"""

import argparse
import gzip
import json
import sys
from pathlib import Path

ARCHIVE = "solutions.jsonl.gz"


class ArchiveError(Exception):
    """The archive or folder named cannot be read; the message says which and why."""


def pack(folder, remove=True):
    """Every DIR/episodes/**/solution.py into DIR/solutions.jsonl.gz, sorted by key; the archive's path."""
    folder = Path(folder)
    episodes = folder / "episodes"
    if not episodes.is_dir():
        raise ArchiveError(f"{episodes} is not a folder: pack takes a sweep's output folder (the one with episodes/)")
    files = sorted(episodes.rglob("solution.py"))
    records = [{"key": str(f.parent.relative_to(episodes)), "source": f.read_text()} for f in files]
    archive = folder / ARCHIVE
    existing = {r["key"]: r for r in read(archive)} if archive.exists() else {}
    existing.update({r["key"]: r for r in records})
    # mtime=0: the same solutions give the same bytes, so git sees no change where none was made.
    with open(archive, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        for key in sorted(existing):
            out.write((json.dumps(existing[key], sort_keys=True) + "\n").encode())
    if remove:
        for f in files:
            f.unlink()
            for parent in f.parents:
                if parent == episodes or any(parent.iterdir()):
                    break
                parent.rmdir()
    return archive


def read(archive):
    """The archive's records, each {"key": "ARM/levelN/NAME", "source": "..."}."""
    archive = Path(archive)
    if not archive.is_file():
        raise ArchiveError(
            f"{archive}: no such archive (python -m training.evaluation.archive pack DIR writes DIR/{ARCHIVE})"
        )
    try:
        with gzip.open(archive, "rt") as lines:
            return [json.loads(line) for line in lines if line.strip()]
    except (OSError, json.JSONDecodeError) as exc:
        raise ArchiveError(f"{archive} is not a gzipped JSONL of solutions: {exc}") from exc


def unpack(archive, to=None, names=None, keys=None):
    """Write each solution (or those NAMED: the NAME part of their key; or those of KEYS) to
    TO/episodes/KEY/solution.py; the paths written."""
    to = Path(to) if to else Path(archive).parent
    written = []
    for record in read(archive):
        if names and record["key"].rsplit("/", 1)[-1] not in names:
            continue
        if keys is not None and record["key"] not in keys:
            continue
        path = to / "episodes" / record["key"] / "solution.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(record["source"])
        written.append(path)
    if names and not written:
        raise ArchiveError(
            f"none of {', '.join(sorted(names))} is in {archive} (python -m training.evaluation.archive list ARCHIVE)"
        )
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m training.evaluation.archive", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("pack", help="pack DIR/episodes/**/solution.py into DIR/solutions.jsonl.gz")
    p.add_argument("folder")
    p.add_argument("--keep", action="store_true", help="leave the solution.py files in place")
    p = commands.add_parser("list", help="the keys of the archive's solutions")
    p.add_argument("archive")
    p = commands.add_parser("unpack", help="write the archive's solutions back as DIR/episodes/KEY/solution.py")
    p.add_argument("archive")
    p.add_argument("--to", help="the folder to unpack into (default: the archive's own folder)")
    p.add_argument("--names", help="comma-separated problem names (default: all)")
    args = parser.parse_args(argv)
    try:
        if args.command == "pack":
            print(pack(args.folder, remove=not args.keep))
        elif args.command == "list":
            for record in read(args.archive):
                print(record["key"])
        else:
            names = set(args.names.split(",")) if args.names else None
            print(f"{len(unpack(args.archive, args.to, names))} solutions written")
    except ArchiveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
