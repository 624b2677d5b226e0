"""Typed readers of environment variables for settings.py."""

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    # "true", "1", "yes" are rejected on purpose: a typo must not silently flip a switch.
    value = os.environ.get(name)
    if value is None:
        return default
    if value not in ("True", "False"):
        raise ImproperlyConfigured(f"{name}={value!r}: use 'True' or 'False'")
    return value == "True"


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected an integer") from None


def env_secret(name: str, default: str) -> str:
    """NAME, or the contents of the file named by NAME_FILE (Docker and Kubernetes secrets)."""
    value, path = os.environ.get(name), os.environ.get(f"{name}_FILE")
    if value is not None and path is not None:
        raise ImproperlyConfigured(f"set {name} or {name}_FILE, not both")
    if path is not None:
        try:
            # Secret files usually end with a newline that is not part of the secret.
            return Path(path).read_text().rstrip("\n")
        except OSError as e:
            raise ImproperlyConfigured(f"{name}_FILE={path!r}: {e.strerror}") from None
    return default if value is None else value


def env_switch(name: str, default: bool) -> bool:
    """A feature switch written 'on' or 'off' (anything else is refused, as env_bool does)."""
    value = os.environ.get(name)
    if value is None:
        return default
    if value not in ("on", "off"):
        raise ImproperlyConfigured(f"{name}={value!r}: use 'on' or 'off'")
    return value == "on"
