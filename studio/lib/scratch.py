"""Scratch folders of jobs under one root, each locked while its job lives, so any process may sweep those whose job
is gone (its worker killed) and never one still in use."""

import fcntl
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

LOCK = ".held"


@dataclass
class Scratch:
    path: Path
    fd: int  # holds the folder's lock; a forked work horse inherits it, so the lock lives while either process does


def claim(root, name):
    """Create ROOT/NAME and hold its lock until release()."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o711)  # like the sandbox's root: others may pass through to a folder they are given, not list it
    path = root / name
    path.mkdir(mode=0o711, exist_ok=True)
    fd = os.open(path / LOCK, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise FileExistsError(
            f"the scratch folder {path} is held by another live process: each job needs a name of its own"
        ) from None
    return Scratch(path, fd)


def release(scratch):
    """Remove the folder with everything in it, then let its lock go."""
    shutil.rmtree(scratch.path, ignore_errors=True)
    os.close(scratch.fd)


def sweep(root):
    """Remove every folder under ROOT whose lock nobody holds (its job's processes are all gone); returns them."""
    root = Path(root)
    removed = []
    for path in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            fd = os.open(path / LOCK, os.O_RDWR | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError):
            continue  # being claimed right now, or not one of ours
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue
        else:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        finally:
            os.close(fd)
    return removed
