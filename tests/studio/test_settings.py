"""studio/settings.py as a fresh process reads it: DEBUG off unless asked, a kept local secret key, and Redis
reads that outwait the channel layer."""

import json
import os
import subprocess
import sys

from django.conf import settings

# Settings decide at import: each case loads them in a process of its own, with only the environment it names.
CONFIGURED = ("DEBUG", "SECRET_KEY", "SECRET_KEY_FILE", "KS_CACHE_DIR", "KS_REDIS_SOCKET_TIMEOUT")


def load_settings(**env):
    """(settings as JSON, or None, stderr) of studio.settings imported under ENV."""
    base = {k: v for k, v in os.environ.items() if k not in CONFIGURED}
    code = (
        "import json, studio.settings as s; print(json.dumps({'DEBUG': s.DEBUG, 'SECRET_KEY': s.SECRET_KEY, "
        "'hosts': s.CHANNEL_LAYERS['default']['CONFIG']['hosts'], 'MIDDLEWARE': s.MIDDLEWARE}))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=settings.BASE_DIR,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return (json.loads(proc.stdout) if proc.returncode == 0 else None), proc.stderr


def test_the_channel_layer_reads_redis_longer_than_it_blocks_waiting_for_messages(tmp_path):
    from channels_redis.core import RedisChannelLayer

    loaded, _ = load_settings(KS_CACHE_DIR=str(tmp_path))
    [host] = loaded["hosts"]
    assert host["socket_timeout"] > RedisChannelLayer.brpop_timeout + 5
    loaded, stderr = load_settings(KS_CACHE_DIR=str(tmp_path), KS_REDIS_SOCKET_TIMEOUT="5")
    assert loaded is None and "KS_REDIS_SOCKET_TIMEOUT=5: must exceed the channel layer's 5 s" in stderr


def test_debug_is_off_unless_the_environment_asks_for_it(tmp_path):
    assert load_settings(KS_CACHE_DIR=str(tmp_path))[0]["DEBUG"] is False
    assert load_settings(KS_CACHE_DIR=str(tmp_path), DEBUG="True")[0]["DEBUG"] is True


def test_without_a_configured_key_every_process_signs_with_the_one_kept_in_the_cache_folder(tmp_path):
    first, second = load_settings(KS_CACHE_DIR=str(tmp_path))[0], load_settings(KS_CACHE_DIR=str(tmp_path))[0]
    assert first["SECRET_KEY"] == second["SECRET_KEY"] == (tmp_path / "secret-key").read_text().strip()
    assert load_settings(KS_CACHE_DIR=str(tmp_path), SECRET_KEY="configured")[0]["SECRET_KEY"] == "configured"


def test_static_files_are_served_with_debug_on_or_off(tmp_path):
    for debug in ("True", "False"):
        middleware = load_settings(KS_CACHE_DIR=str(tmp_path), DEBUG=debug)[0]["MIDDLEWARE"]
        assert middleware[1] == "servestatic.middleware.ServeStaticMiddleware"
