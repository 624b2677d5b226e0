"""The openai policy against a server that is not ours: Hugging Face's `transformers serve` on loopback, serving
tiny models made here. Client and server agree by the OpenAI API alone, not by sharing code."""

import shutil
import subprocess
import sys
import time
import urllib.request

import pytest

from agent.loop import Episode, EpisodeConfig
from agent.policies.base import PolicyUnavailable
from agent.policies.openai import OpenAIPolicy
from agent.tools import SCHEMAS

from .conftest import build_tiny_model

pytest.importorskip("fastapi", reason="transformers serve needs transformers[serving] (the test extra)")
SERVE = shutil.which("transformers", path=str(__import__("pathlib").Path(sys.executable).parent))


def serve(model, port):
    """`transformers serve MODEL` on PORT; waits for /v1/models to answer."""
    proc = subprocess.Popen(
        [SERVE, "serve", str(model), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("transformers serve exited:\n" + proc.stdout.read())
        try:
            urllib.request.urlopen(url + "/models", timeout=2).read()
            return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("transformers serve did not answer within 180 s")


@pytest.fixture(scope="module")
def hf_servers(tmp_path_factory):
    """A Qwen2-type model (the server parses its Hermes tool calls) and a Mistral-type one (it does not: the calls
    stay in the text), each served by its own `transformers serve`."""
    from studio.testing import free_port

    procs, urls = [], {}
    try:
        for arch in ("qwen2", "mistral"):
            proc, urls[arch] = serve(build_tiny_model(tmp_path_factory.mktemp(f"hf-{arch}"), arch=arch), free_port())
            procs.append(proc)
        yield urls
    finally:
        for proc in procs:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
            proc.stdout.close()


def opening(relu_problem, tmp_path, fast_eval, scripted):
    recorder = scripted([[("submit", {})]])
    Episode(relu_problem, recorder, tmp_path / "ws", EpisodeConfig(device="cpu", max_turns=1, eval=fast_eval)).run()
    return recorder.seen[0]


def test_tool_calls_parsed_by_the_server_reach_the_agent_as_tool_calls(
    hf_servers, relu_problem, tmp_path, fast_eval, scripted
):
    policy = OpenAIPolicy(base_url=hf_servers["qwen2"], temperature=0.0, max_tokens=64, retries=1)
    action = policy.act(opening(relu_problem, tmp_path, fast_eval, scripted), SCHEMAS)
    assert policy.model.endswith("hf-qwen20")  # found through the server's own /v1/models
    assert action.finish_reason == "tool_calls"
    assert [(c.name, c.arguments, c.error) for c in action.tool_calls] == [("read_file", {"path": "problem.py"}, "")]
    assert action.tool_calls[0].id and action.completion_tokens > 0 and action.prompt_tokens > 100


def test_tool_calls_a_server_leaves_in_the_text_are_read_from_it(
    hf_servers, relu_problem, tmp_path, fast_eval, scripted
):
    policy = OpenAIPolicy(base_url=hf_servers["mistral"], temperature=0.0, max_tokens=64, retries=1)
    action = policy.act(opening(relu_problem, tmp_path, fast_eval, scripted), SCHEMAS)
    assert [(c.name, c.arguments, c.error) for c in action.tool_calls] == [("read_file", {"path": "problem.py"}, "")]
    assert "</tool_call>" not in action.thought


def test_replies_cut_short_and_a_failing_server_become_clear_outcomes_and_token_ids_are_never_invented(
    hf_servers, relu_problem, tmp_path, fast_eval, scripted
):
    messages = opening(relu_problem, tmp_path, fast_eval, scripted)
    # Cut before the tool call: a thought and no call (the loop then asks for one), no token data invented.
    action = OpenAIPolicy(base_url=hf_servers["qwen2"], temperature=0.0, max_tokens=3, retries=1).act(messages, SCHEMAS)
    assert action.finish_reason == "length" and action.completion_tokens == 3
    assert action.tool_calls == [] and action.thought.startswith("Reading")
    assert action.prompt_token_ids is None and action.response_token_ids is None
    # Cut inside the tool call: this server's parser fails (HTTP 500, every retry); the error says so.
    with pytest.raises(PolicyUnavailable, match="kept answering HTTP 500 .* check its log"):
        OpenAIPolicy(base_url=hf_servers["qwen2"], temperature=0.0, max_tokens=12, retries=1, backoff_s=0.05).act(
            messages, SCHEMAS
        )
    # It refuses vLLM's return_token_ids field (HTTP 422): the error says which server has them.
    with pytest.raises(PolicyUnavailable, match="does not return token ids .* without --token-ids"):
        OpenAIPolicy(base_url=hf_servers["qwen2"], max_tokens=8, retries=1, token_ids=True).act(messages, SCHEMAS)
