"""Fixtures of the agent tests: a small problem and its C++ solution, a scripted policy, and a tiny model served by
agent.serve on loopback (the run's sandbox cache is tests/conftest.py's ks_cache_dir).

Everything runs for real: the sandbox evaluates on the CPU, the server generates with a transformers model.
The model is a 190k-parameter Mistral with a tokenizer trained here (no hub download is possible): it is
trained for two seconds to answer every turn with one tool call. Its attention window is 32 tokens, so
what it learned on short windows holds at any position of the long real prompts.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

os.environ["KS_SANDBOX_MEMORY_MB"] = "4096"
os.environ["HF_HUB_OFFLINE"] = "1"  # every model here is made locally; never wait on a hub

from sandbox import settings  # noqa: E402 -- after the environment above
from sandbox.config import EvalConfig  # noqa: E402

from agent.policies.base import Action, Policy  # noqa: E402
from agent.policies.chat_template import CHAT_TEMPLATE  # noqa: E402
from agent.trajectory import ToolCall  # noqa: E402

settings.MEMORY_MB = 4096
ROOT = Path(__file__).resolve().parents[2]


RELU = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(256, 512)]


def get_init_inputs():
    return []
"""

# A correct CPU solution of RELU, as the native workspace files an agent would write.
RELU_SOLUTION = {
    "model_new.py": """
        import torch.nn as nn

        from sandbox.native import load_extension

        ext = load_extension(__file__)


        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()

            def forward(self, x):
                return ext.relu(x.contiguous())
        """,
    "binding.cpp": """
        #include <torch/csrc/stable/library.h>
        #include <torch/csrc/stable/ops.h>
        #include <torch/csrc/stable/tensor.h>

        using torch::stable::Tensor;

        void relu_forward(const float* x, float* y, int64_t n);

        Tensor relu(Tensor x) {
            Tensor y = torch::stable::empty_like(x);
            relu_forward(reinterpret_cast<const float*>(x.data_ptr()), reinterpret_cast<float*>(y.data_ptr()), x.numel());
            return y;
        }

        STABLE_TORCH_LIBRARY(KS_NAMESPACE, m) { m.def("relu(Tensor x) -> Tensor"); }
        STABLE_TORCH_LIBRARY_IMPL(KS_NAMESPACE, CPU, m) { m.impl("relu", TORCH_BOX(&relu)); }
        """,
    "kernels/relu.cpp": """
        #include <algorithm>
        #include <cstdint>

        void relu_forward(const float* x, float* y, int64_t n) {
            for (int64_t i = 0; i < n; ++i) y[i] = std::max(x[i], 0.0f);
        }
        """,
}
RELU_SOLUTION = {k: textwrap.dedent(v).lstrip("\n") for k, v in RELU_SOLUTION.items()}


@pytest.fixture
def cpu_solution(tmp_path):
    """solve(source): the heuristic's C++ solution of the problem SOURCE, written under tmp_path with the kernel
    library and built: (its ModelNew() and the problem's Model(), both made without init inputs; the files)."""
    import importlib.util

    from agent.heuristic.analyze import analyze
    from agent.heuristic.codegen import workspace_files
    from agent.heuristic.plan import make_plan
    from agent.library import library_files

    def solve(source):
        problem = tmp_path / "problem.py"
        problem.write_text(source)
        files = {**library_files("cpu"), **workspace_files(make_plan(analyze(str(problem))), "cpu", source)}
        for path, text in files.items():
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text(text)
        spec = importlib.util.spec_from_file_location("model_new", tmp_path / "model_new.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # builds the extension
        reference = {}
        exec(source, reference)  # noqa: S102 -- the test's own module
        return module.ModelNew(), reference["Model"](), files

    return solve


@pytest.fixture
def nvcc_compile(tmp_path):
    """compile(files): write a CUDA workspace's FILES under tmp_path and compile its kernels/fused.cu with the local
    nvcc for sm_90 (the GPU hosts' Hopper); the finished process, its stderr for the assertion's message."""

    def compile_(files):
        for path, text in files.items():
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text(text)
        kernels = tmp_path / "kernels"
        command = [shutil.which("nvcc") or "nvcc", "-std=c++17", "-arch=sm_90", "-c", str(kernels / "fused.cu")]
        command += ["-I", str(kernels), "-o", str(tmp_path / "fused.o")]
        return subprocess.run(command, check=False, capture_output=True, text=True, timeout=300)

    return compile_


@pytest.fixture
def relu_problem(tmp_path):
    path = tmp_path / "relu.py"
    path.write_text(textwrap.dedent(RELU))
    return path


@pytest.fixture
def fast_eval():
    """A quick CPU evaluation: no torch.compile baseline, a short timing budget."""
    return EvalConfig(
        device="cpu",
        compiled_baseline=False,
        time_budget_s=0.2,
        warmup_s=0.05,
        min_samples=10,
        max_samples=100,
        timeout_s=120,
    )


@pytest.fixture
def heuristic_episode(tmp_path):
    """heuristic_episode(source, name) -> the Trajectory of the heuristic policy's CPU episode on SOURCE, written as
    tmp_path/NAME.py, its workspace in tmp_path/workspace."""
    from agent.loop import Episode, EpisodeConfig
    from agent.policies import make_policy

    def run(source, name):
        problem = tmp_path / f"{name}.py"
        problem.write_text(source)
        config = EpisodeConfig(
            device="cpu", max_turns=8, eval=EvalConfig(device="cpu", compiled_baseline=False, time_budget_s=0.4)
        )
        return Episode(problem, make_policy("heuristic"), tmp_path / "workspace", config).run()

    return run


class ScriptedPolicy(Policy):
    """A real policy that replays a fixed list of turns (each a list of (tool name, arguments)), then reads
    problem.py forever. It records what it was given, as a model server would see it."""

    name = "scripted"

    def __init__(self, turns, delay_s=0.0):
        self.turns = list(turns)
        self.delay_s = delay_s
        self.seen = []
        self.observed = []

    def act(self, messages, tools):
        self.seen.append(messages)
        time.sleep(self.delay_s)
        step = self.turns.pop(0) if self.turns else [("read_file", {"path": "problem.py"})]
        if isinstance(step, Action):
            return step
        return Action(
            thought=f"step {len(self.seen)}",
            tool_calls=[ToolCall(name=name, arguments=dict(args)) for name, args in step],
        )

    def observe(self, turn):
        self.observed.append(turn)

    @staticmethod
    def write(files):
        """A turn that writes FILES ({relative path: text}) into the workspace."""
        return [("write_file", {"path": rel, "content": text}) for rel, text in files.items()]


@pytest.fixture
def scripted():
    """The ScriptedPolicy class (test modules cannot import conftest under --import-mode=importlib)."""
    return ScriptedPolicy


@pytest.fixture
def relu_solution():
    return dict(RELU_SOLUTION)


# -- the tiny served model -----------------------------------------------------------------------------------
ANSWER = (
    'Reading the problem first.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "problem.py"}}\n</tool_call>'
)
WINDOW = 24


def _training_contexts():
    """Conversations ending where the model must answer: after the task, after tool results, after a nudge."""
    from agent.context import NO_TOOL_CALL
    from agent.loop import SYSTEM, TASK, budget_text
    from agent.workspace import SKILL

    task = TASK.format(
        device_name="CPU",
        device="cpu",
        source=textwrap.dedent(RELU).strip(),
        listing="problem.py",
        budget=budget_text(60, None),
    )
    opening = [{"role": "system", "content": SYSTEM + SKILL.read_text()}, {"role": "user", "content": task}]
    call = {"id": "c", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "problem.py"}'}}
    contexts = [opening]
    for result in (
        "problem.py (14 lines)\nimport torch",
        "error: x does not exist",
        "verify: ok, reward 0\n[best]",
        "wrote model_new.py (3 lines)",
    ):
        contexts.append(
            opening
            + [
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c", "content": result},
            ]
        )
    contexts.append(opening + [{"role": "assistant", "content": "hm"}, {"role": "user", "content": NO_TOOL_CALL}])
    return contexts


def build_tiny_model(folder, arch="mistral"):
    """A tiny model trained to open an episode with a read_file call; ARCH 'mistral' or 'qwen2' (a model type
    `transformers serve` parses Hermes tool calls for)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import MistralConfig, MistralForCausalLM, PreTrainedTokenizerFast

    from agent.policies.base import template_messages
    from agent.tools import SCHEMAS
    from agent.workspace import SKILL

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    corpus = [SKILL.read_text(), json.dumps(SCHEMAS), textwrap.dedent(RELU), ANSWER] * 2
    tokenizer.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=2000, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
        ),
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=CHAT_TEMPLATE
    )
    fast.add_tokens(["<tool_call>", "</tool_call>"])
    answer = fast(ANSWER + "<|im_end|>", add_special_tokens=False)["input_ids"]
    rows = []
    for messages in _training_contexts():
        prompt = fast.apply_chat_template(
            template_messages(messages), tools=SCHEMAS, add_generation_prompt=True, tokenize=False
        )
        rows.append(fast(prompt, add_special_tokens=False)["input_ids"][-WINDOW:] + answer)
    ids = torch.tensor(rows)
    labels = ids.clone()
    labels[:, :WINDOW] = -100
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a model this small trains faster on one thread than on contended ones
    shape = dict(
        vocab_size=len(fast),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=32768,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    if arch == "qwen2":
        from transformers import Qwen2Config, Qwen2ForCausalLM

        # Every layer attends to the last 32 tokens, as the Mistral one does: it was trained on prompts' tails.
        model = Qwen2ForCausalLM(Qwen2Config(use_sliding_window=True, sliding_window=32, max_window_layers=0, **shape))
    else:
        model = MistralForCausalLM(MistralConfig(sliding_window=32, **shape))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(150):
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.set_num_threads(threads)
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


@pytest.fixture
def conversation():
    """An episode's opening messages followed by one tool call and its result: the tiny model answers it."""
    return _training_contexts()[1]


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    pytest.importorskip("transformers", reason="the served-model tests need transformers (the test extra)")
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


def start_server(model, *flags):
    """`python -m agent.serve` on a free loopback port; returns the process (its first line names the URL)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent.serve",
            "--model",
            str(model),
            "--name",
            "tiny",
            "--port",
            "0",
            "--device",
            "cpu",
            *flags,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for_url(proc, timeout=180):
    deadline = time.monotonic() + timeout
    lines = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("serving "):
            return line.split(" on ")[-1].strip()
    proc.kill()
    raise RuntimeError("agent.serve did not start:\n" + "".join(lines))


def serve_in_thread(policy, **modes):
    """agent.serve's server on a free loopback port, in a thread of this process; returns (httpd, server, URL)."""
    from http.server import ThreadingHTTPServer

    from agent.serve import Server, handler

    server = Server(policy, "tiny", **modes)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler(server))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, server, f"http://127.0.0.1:{httpd.server_address[1]}/v1"


@pytest.fixture(scope="session")
def servers(tiny_model):
    """The tiny model served three ways: by `python -m agent.serve` (normal), and by the same server code in
    threads of this process sharing one loaded model: --malformed, and --unavailable-first 2 (flaky)."""
    from agent.policies.transformers_policy import TransformersPolicy

    proc = start_server(tiny_model)
    threaded = []
    try:
        policy = TransformersPolicy(tiny_model, device="cpu")
        threaded = [serve_in_thread(policy, malformed=True), serve_in_thread(policy, unavailable_first=2)]
        yield {
            "normal": wait_for_url(proc),
            "malformed": threaded[0][2],
            "flaky": threaded[1][2],
            "flaky_server": threaded[1][1],
        }
    finally:
        for httpd, _, _ in threaded:
            httpd.shutdown()
            httpd.server_close()
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        proc.stdout.close()
