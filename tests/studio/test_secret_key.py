"""studio.lib.secret_key: the generated SECRET_KEY of a machine where none is configured."""

import subprocess
import sys

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from studio.lib.secret_key import local_secret_key


def test_a_key_is_made_once_kept_private_and_read_back(tmp_path):
    key = local_secret_key(tmp_path / "cache")
    assert len(key) >= 50
    assert (tmp_path / "cache" / "secret-key").stat().st_mode & 0o777 == 0o600
    assert local_secret_key(tmp_path / "cache") == key
    assert local_secret_key(tmp_path / "elsewhere") != key
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["secret-key"]  # no partial file left behind


def test_processes_starting_together_all_get_the_same_key(tmp_path):
    code = f"from studio.lib.secret_key import local_secret_key; print(local_secret_key({str(tmp_path)!r}))"
    processes = [
        subprocess.Popen([sys.executable, "-c", code], cwd=settings.BASE_DIR, stdout=subprocess.PIPE, text=True)
        for _ in range(8)
    ]
    keys = {process.communicate(timeout=60)[0].strip() for process in processes}
    assert keys == {(tmp_path / "secret-key").read_text().strip()}


def test_a_folder_that_cannot_hold_the_key_says_how_to_configure_one(tmp_path):
    (tmp_path / "a-file").write_text("")
    with pytest.raises(ImproperlyConfigured, match="set SECRET_KEY or SECRET_KEY_FILE, or make KS_CACHE_DIR writable"):
        local_secret_key(tmp_path / "a-file" / "cache")
    (tmp_path / "secret-key").write_text("\n")
    with pytest.raises(ImproperlyConfigured, match="is empty: delete it"):
        local_secret_key(tmp_path)
