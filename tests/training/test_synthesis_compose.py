"""Composition: stacked seeds make KernelBench-format problems whose shapes flow; they parse and run; sizes
rescale; the LLM-assisted composer takes a problem from an OpenAI-compatible endpoint."""

import ast
import json
import random
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch

from agent.policies.openai import OpenAIPolicy
from training.synthesis.compose import CompositionError, LLMComposer, batch_of, compose, draw_depth, rescale, trace
from training.synthesis.seeds import catalogue


@pytest.fixture(scope="module")
def seeds():
    return catalogue()


def test_fifty_compositions_all_parse_and_run_with_their_shapes_flowing(seeds):
    depths, classes = Counter(), Counter()
    for i in range(50):
        candidate = compose(random.Random(i), seeds, "tiny")
        tree = ast.parse(candidate.source)
        defined = {node.name for node in tree.body if isinstance(node, (ast.ClassDef, ast.FunctionDef))}
        assert {"Model", "get_inputs", "get_init_inputs"} <= defined
        assert "import transformers" not in candidate.source
        out, model, inputs = trace(candidate.source, "cpu", seed=i)
        assert isinstance(out, torch.Tensor) and out.numel() > 0, candidate.source
        assert inputs[0].shape[0] == batch_of(candidate.source) == 2
        assert len(candidate.seeds) == len(candidate.op_classes) == candidate.depth
        assert candidate.source.count("x = ") >= candidate.depth  # one step of forward per seed at least
        depths[candidate.depth] += 1
        classes.update(candidate.op_classes)
    assert set(depths) == {1, 2, 3, 4, 5}
    assert len(classes) >= 12


def test_composition_is_reproducible_from_its_random_state(seeds):
    a, b = (compose(random.Random(7), seeds, "tiny", depth=4) for _ in range(2))
    assert a == b


def test_parameters_are_sized_to_fit_the_running_shape(seeds):
    linear = [s for s in seeds if s.name == "nn.Linear"]
    conv = [s for s in seeds if s.name == "nn.Conv2d"]
    for i in range(5):
        candidate = compose(
            random.Random(i), conv + linear + [s for s in seeds if s.name == "torch.flatten"], "tiny", depth=3
        )
        out, model, inputs = trace(candidate.source, "cpu")
        assert out.shape[0] == inputs[0].shape[0]


def test_rescaling_changes_only_the_batch(seeds):
    candidate = compose(random.Random(3), seeds, "tiny", depth=2)
    bigger = rescale(candidate.source, 8.0)
    assert batch_of(bigger) == 16
    assert bigger.replace("batch_size = 16", "batch_size = 2") == candidate.source
    assert rescale(candidate.source, 8.0, limit=4) == candidate.source.replace("batch_size = 2", "batch_size = 4")
    assert rescale("x = 1\n", 2.0) is None


def test_depths_are_drawn_from_one_to_the_maximum():
    rng = random.Random(0)
    assert {draw_depth(rng, 3) for _ in range(200)} == {1, 2, 3}


def test_an_unknown_class_is_a_composition_error(seeds):
    with pytest.raises(CompositionError, match="no seed in the catalogue fits classes"):
        compose(random.Random(0), seeds, "tiny", classes=("no_such_class",))


class _Endpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint on loopback answering every completion with the queued reply."""

    replies, requests = [], []

    def do_POST(self):  # noqa: N802 -- http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        payload = json.dumps(type(self).replies.pop(0)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Endpoint.replies, _Endpoint.requests = [], []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", _Endpoint
    server.shutdown()


def completion(message):
    return {"choices": [{"message": message, "finish_reason": "stop"}], "usage": {}}


LLM_SOURCE = (
    "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
    "        return torch.tanh(torch.relu(x))\n\nbatch_size = 4\n\ndef get_inputs():\n"
    "    return [torch.randn(batch_size, 32)]\n\ndef get_init_inputs():\n    return []\n"
)


def test_the_llm_composer_asks_for_the_drawn_seeds_and_takes_the_submitted_file(seeds, endpoint):
    url, handler = endpoint
    handler.replies.append(
        completion(
            {
                "content": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "submit_problem", "arguments": json.dumps({"source": LLM_SOURCE})},
                    }
                ],
            }
        )
    )
    composer = LLMComposer(OpenAIPolicy(model="m", base_url=url, retries=0))
    candidate = composer.compose(random.Random(1), seeds, depth=2)
    assert candidate.source == LLM_SOURCE and candidate.composer == "llm" and candidate.depth == 2
    prompt = handler.requests[0]["messages"][-1]["content"]
    assert all(name in prompt for name in candidate.seeds)
    assert handler.requests[0]["tools"][0]["function"]["name"] == "submit_problem"


def test_the_llm_composer_takes_a_fenced_file_and_rejects_a_reply_without_one(seeds, endpoint):
    url, handler = endpoint
    handler.replies += [
        completion({"content": f"Here it is:\n```python\n{LLM_SOURCE}```"}),
        completion({"content": "I cannot do that."}),
    ]
    composer = LLMComposer(OpenAIPolicy(model="m", base_url=url, retries=0))
    assert composer.compose(random.Random(2), seeds, depth=1).source == LLM_SOURCE
    with pytest.raises(CompositionError, match="without a problem file"):
        composer.compose(random.Random(3), seeds, depth=1)
