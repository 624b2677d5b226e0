"""An external policy server (`rollouts.base_url`) is refused for the actor's episodes unless it reloads the pushed
weights; the vLLM reload walks vLLM's documented RLHF weight-update endpoints in order, and a server without them
is an error that says how to start it."""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from training.rl import config as run_config
from training.rl.config import StaleServerError
from training.rl.reload import ReloadError, reload_vllm

ROOT = Path(__file__).resolve().parents[2]
EXTERNAL = ["rollouts.backend=rq", "rollouts.policy=openai", "rollouts.base_url=http://127.0.0.1:9/v1"]


def test_ppo_against_a_server_that_does_not_reload_is_refused_naming_the_fix():
    toy = run_config.load(ROOT / "training/configs/toy.yaml")
    with pytest.raises(StaleServerError, match=r"first checkpoint forever. Set rollouts.reload: vllm"):
        run_config.override(toy, EXTERNAL)
    allowed = run_config.override(toy, EXTERNAL + ["rollouts.reload=vllm"])
    assert allowed.rollouts.reload == "vllm"
    # the heuristic's RFT episodes alone never reach the actor's server
    assert run_config.override(toy, EXTERNAL + ["stages=[rft]", "eval_episodes=0"]).rollouts.base_url


def test_the_train_command_refuses_it_before_any_stage_runs(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "training",
            "train",
            "training/configs/toy.yaml",
            "--run-dir",
            str(tmp_path / "run"),
            *[a for kv in EXTERNAL for a in ("--set", kv)],
        ],
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2 and "rollouts.reload: vllm" in result.stderr
    assert not (tmp_path / "run").exists()


class Recorder(BaseHTTPRequestHandler):
    """An HTTP server answering as vLLM's development endpoints do (200 and an empty body), recording the calls."""

    calls, missing = [], set()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).calls.append((self.path, json.loads(body) if body else None, self.headers.get("Authorization")))
        code = 404 if self.path.split("?")[0] in type(self).missing else 200
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    Recorder.calls, Recorder.missing = [], set()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_the_vllm_reload_sleeps_wakes_the_weights_reloads_them_then_the_cache(server):
    reload_vllm(server + "/v1", api_key="secret")
    assert [(path, body) for path, body, _ in Recorder.calls] == [
        ("/sleep?level=2", None),
        ("/wake_up?tags=weights", None),
        ("/collective_rpc", {"method": "reload_weights"}),
        ("/wake_up?tags=kv_cache", None),
        ("/reset_prefix_cache", None),
    ]
    assert {auth for _, _, auth in Recorder.calls} == {"Bearer secret"}


def test_a_server_without_the_development_endpoints_is_an_error_saying_how_to_start_it(server):
    Recorder.missing = {"/sleep"}
    with pytest.raises(ReloadError, match=r"/sleep\?level=2 answered HTTP 404 .*VLLM_SERVER_DEV_MODE=1"):
        reload_vllm(server + "/v1")
