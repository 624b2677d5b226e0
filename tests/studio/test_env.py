"""The typed environment readers behind settings.py."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from studio.lib.env import env_bool, env_int, env_secret


def test_env_bool_rejects_anything_but_true_or_false(monkeypatch):
    for typo in ("true", "1", "yes", ""):
        monkeypatch.setenv("KS_FLAG", typo)
        with pytest.raises(ImproperlyConfigured, match="KS_FLAG"):
            env_bool("KS_FLAG", False)
    monkeypatch.setenv("KS_FLAG", "True")
    assert env_bool("KS_FLAG", False) is True
    monkeypatch.setenv("KS_FLAG", "False")
    assert env_bool("KS_FLAG", True) is False
    monkeypatch.delenv("KS_FLAG")
    assert env_bool("KS_FLAG", True) is True


def test_env_int_names_the_variable_it_cannot_parse(monkeypatch):
    monkeypatch.setenv("KS_NUMBER", "8k")
    with pytest.raises(ImproperlyConfigured, match="KS_NUMBER"):
        env_int("KS_NUMBER", 1)
    monkeypatch.setenv("KS_NUMBER", "8000")
    assert env_int("KS_NUMBER", 1) == 8000


def test_env_secret_reads_the_file_named_by_NAME_FILE(monkeypatch, tmp_path):  # noqa: N802
    secret = tmp_path / "key"
    secret.write_text("s3cret value\n")
    monkeypatch.delenv("KS_KEY", raising=False)
    monkeypatch.setenv("KS_KEY_FILE", str(secret))
    assert env_secret("KS_KEY", "default") == "s3cret value"
    monkeypatch.setenv("KS_KEY", "inline")
    with pytest.raises(ImproperlyConfigured, match="not both"):
        env_secret("KS_KEY", "default")
    monkeypatch.delenv("KS_KEY_FILE")
    assert env_secret("KS_KEY", "default") == "inline"
