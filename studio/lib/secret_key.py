"""A random SECRET_KEY kept in a local folder for machines where none is configured (runstudio out of the box)."""

import os
import secrets
import tempfile
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

FILE_NAME = "secret-key"


def local_secret_key(folder: Path) -> str:
    """The key kept in FOLDER/secret-key, created on first use, readable by this user only."""
    path = Path(folder) / FILE_NAME
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            _create(path)
        key = path.read_text().strip()
    except OSError as e:
        raise ImproperlyConfigured(
            f"no SECRET_KEY is set and the generated one in {path} cannot be kept: "
            f"{e.strerror}; set SECRET_KEY or SECRET_KEY_FILE, or make KS_CACHE_DIR "
            "writable"
        ) from None
    if not key:
        raise ImproperlyConfigured(f"{path} is empty: delete it to have a new key generated, or set SECRET_KEY")
    return key


def _create(path: Path) -> None:
    # Written whole under another name, then linked into place: the studio's processes start together, and none
    # may read a half-written key or overwrite the key another one already uses.
    fd, partial = tempfile.mkstemp(dir=path.parent, prefix=".secret-key-")  # mode 0600
    try:
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(50) + "\n")
        try:
            os.link(partial, path)
        except FileExistsError:
            pass  # another process got there first: its key is the one
    finally:
        os.unlink(partial)
