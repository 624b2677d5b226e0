"""Weight reloads of an external policy server (`rollouts.base_url`): after each push of the actor to RUN/policy/,
the server must serve the new weights, or PPO would roll out the first checkpoint forever.

One protocol is supported, vLLM's documented RLHF weight update through its development endpoints (vLLM's
sleep-mode guide): sleep at level 2 (weights and KV cache discarded), wake the weights, `reload_weights` from the
folder the server was started on, wake the KV cache, reset the prefix cache (cached prefixes hold the old
weights' keys and values). The server must be started on RUN/policy/ with them enabled:

    VLLM_SERVER_DEV_MODE=1 vllm serve RUN/policy --enable-sleep-mode --enable-auto-tool-choice \
        --tool-call-parser hermes

A server that cannot reload (no `rollouts.reload: vllm`) is refused before any episode is run.
"""

import json
import logging
import urllib.error
import urllib.request

log = logging.getLogger(__name__)

# vLLM's development endpoints, at the server's root (not under /v1), in order.
VLLM_STEPS = [
    ("POST", "/sleep?level=2", None),
    ("POST", "/wake_up?tags=weights", None),
    ("POST", "/collective_rpc", {"method": "reload_weights"}),
    ("POST", "/wake_up?tags=kv_cache", None),
    ("POST", "/reset_prefix_cache", None),
]


class ReloadError(RuntimeError):
    """The policy server did not reload the pushed weights; the message names the endpoint and the fix."""


def root_of(base_url):
    """The server's root URL from an OpenAI-style base URL (http://host:8001/v1 -> http://host:8001)."""
    return base_url.rstrip("/").removesuffix("/v1")


def reload_vllm(base_url, api_key="", timeout_s=600.0):
    """Make the vLLM server at BASE_URL load its model folder's weights again (they were just pushed there)."""
    root = root_of(base_url)
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    for method, path, body in VLLM_STEPS:
        data = json.dumps(body).encode() if body is not None else b""
        request = urllib.request.Request(root + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            hint = (
                " (start the server with VLLM_SERVER_DEV_MODE=1 and --enable-sleep-mode)"
                if exc.code in (404, 405)
                else ""
            )
            raise ReloadError(
                f"{root + path} answered HTTP {exc.code}{hint}: the server still holds the previous weights"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ReloadError(
                f"{root + path} failed ({getattr(exc, 'reason', exc)}): is the policy server at {base_url} running?"
            ) from None
    log.info("policy server %s reloaded its weights", root)
