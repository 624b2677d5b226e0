"""The openai policy against agent.serve serving a tiny model on loopback: tool calls, token data, malformed
replies, retries, context errors, an unreachable endpoint, and a whole episode from the command line."""

import json
import socket
import subprocess
import sys
import time

import pytest

from agent.loop import Episode, EpisodeConfig
from agent.policies.base import ContextTooLong, PolicyUnavailable
from agent.policies.openai import OpenAIPolicy
from agent.tools import SCHEMAS, Tools
from agent.trajectory import Trajectory
from agent.workspace import Workspace

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def policy(url, **options):
    return OpenAIPolicy(base_url=url, temperature=0.0, max_tokens=64, retries=3, backoff_s=0.05, **options)


def test_openai_policy_gets_tool_calls_and_token_data_from_a_served_model(
    servers, relu_problem, tmp_path, fast_eval, scripted
):
    # The real opening messages of an episode, as the loop builds them, through a scripted first turn.
    recorder = scripted([[("submit", {})]])
    Episode(relu_problem, recorder, tmp_path / "ws", EpisodeConfig(device="cpu", max_turns=1, eval=fast_eval)).run()
    opening = recorder.seen[0]
    served = policy(servers["normal"], token_ids=True)
    action = served.act(opening, SCHEMAS)
    assert served.model == "tiny"  # found through /v1/models
    assert action.thought == "Reading the problem first."
    assert [(c.name, c.arguments, c.error) for c in action.tool_calls] == [("read_file", {"path": "problem.py"}, "")]
    assert action.tool_calls[0].id.startswith("call_") and action.finish_reason == "tool_calls"
    assert action.prompt_tokens == len(action.prompt_token_ids) > 1000
    assert action.completion_tokens == len(action.response_token_ids) == len(action.response_logprobs)
    assert all(lp <= 0.0 for lp in action.response_logprobs)
    plain = policy(servers["normal"], model="tiny").act(opening, SCHEMAS)
    assert plain.prompt_token_ids is None and plain.tool_calls[0].name == "read_file"


def test_malformed_tool_call_json_from_the_server_becomes_an_observation(
    servers, conversation, relu_problem, tmp_path, fast_eval
):
    action = policy(servers["malformed"]).act(conversation, SCHEMAS)
    call = action.tool_calls[0]
    assert call.name == "read_file" and call.arguments == {}
    assert "not valid JSON" in call.error
    tools = Tools(Workspace.create(tmp_path / "ws", relu_problem, "cpu"), relu_problem, fast_eval)
    tools.run(call)
    assert call.observation.startswith("error: the arguments of read_file are not valid JSON")
    assert "call the tool again" in call.observation


def test_retries_with_backoff_until_the_endpoint_answers(servers, conversation):
    started = time.monotonic()
    action = policy(servers["flaky"]).act(conversation, SCHEMAS)
    assert action.tool_calls and servers["flaky_server"].unavailable_left == 0  # two 503s, then an answer
    assert time.monotonic() - started >= 0.05 * 0.5 + 0.1 * 0.5  # the two backoff sleeps, jitter included


def test_a_prompt_longer_than_the_context_raises_context_too_long(servers):
    with pytest.raises(ContextTooLong, match="maximum context length"):
        policy(servers["normal"]).act([{"role": "user", "content": "word " * 40000}], SCHEMAS)


def test_an_unreachable_endpoint_raises_policy_unavailable_saying_what_to_do():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again on exit: nothing listens there
    started = time.monotonic()
    with pytest.raises(PolicyUnavailable) as error:
        policy(f"http://127.0.0.1:{port}/v1", model="m").act([{"role": "user", "content": "hi"}], SCHEMAS)
    message = str(error.value)
    assert f"127.0.0.1:{port}/v1/chat/completions failed 4 times" in message and "refused" in message.lower()
    assert "python -m agent.serve" in message and "--base-url" in message
    assert time.monotonic() - started < 10


def test_cli_runs_an_episode_against_the_served_model(servers, relu_problem, tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent",
            "optimize",
            str(relu_problem),
            "--policy",
            "openai",
            "--base-url",
            servers["normal"],
            "--model",
            "tiny",
            "--temperature",
            "0",
            "--max-tokens",
            "64",
            "--token-ids",
            "--device",
            "cpu",
            "--max-turns",
            "2",
            "--no-compiled",
            "--out",
            str(out),
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # --json: stdout is the verdict alone; the per-turn progress and the summary go to stderr.
    assert "turn 1/2  read_file(path=problem.py)" in proc.stderr and "max_turns after 2 turns" in proc.stderr
    assert json.loads(proc.stdout) == json.loads((out / "verdict.json").read_text())
    assert {p.name for p in out.iterdir()} == {"solution.py", "workspace", "trajectory.json", "verdict.json"}
    trajectory = Trajectory.loads((out / "trajectory.json").read_text())
    assert trajectory.policy == "openai" and trajectory.model == "tiny" and len(trajectory.turns) == 2
    assert trajectory.turns[0].tool_calls[0].observation.startswith("problem.py (")
    # The second prompt extends the first prompt and answer token for token: one training sequence.
    (sequence,) = trajectory.token_sequences()
    assert sum(sequence["loss_mask"]) == sum(len(t.response_token_ids) for t in trajectory.turns)
    assert json.loads((out / "verdict.json").read_text())["status"] == "runtime_error"  # the starter, unwritten
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent",
            "optimize",
            str(relu_problem),
            "--policy",
            "openai",
            "--device",
            "cpu",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert again.returncode == 2 and "not empty" in again.stderr


def test_a_server_that_answers_500_and_then_drops_the_connection_is_reported_by_its_500():
    # `transformers serve` does this when its tool-call parser fails: HTTP 500, then resets on the retry. The error
    # must name the 500 (a failing server: read its log), not the reset (which reads as "start a server").
    import struct
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    body = b'{"error": {"message": "tool call parser failed"}}'

    def serve():
        for n in range(4):
            conn, _ = listener.accept()
            conn.recv(65536)
            if n == 0:
                head = f"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
                conn.sendall(head.encode() + b"\r\nConnection: close\r\n\r\n" + body)
            else:  # a reset, not a clean close: SO_LINGER with a zero timeout
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with pytest.raises(PolicyUnavailable) as error:
            policy(f"http://127.0.0.1:{port}/v1", model="m").act([{"role": "user", "content": "hi"}], SCHEMAS)
    finally:
        listener.close()
    message = str(error.value)
    assert "kept answering HTTP 500 and then dropped the connection" in message and "check its log" in message
    assert "python -m agent.serve" not in message
