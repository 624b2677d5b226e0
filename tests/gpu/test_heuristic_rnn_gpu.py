"""The RNN family on the GPU: KernelBench level 3's LSTM and GRU problems at their own sizes, and the CPU test's
user modules (tests/agent/test_heuristic_rnn.py), one episode each, reaching a correct solution whose steps run as
cuBLAS GEMMs and fused cell kernels (ks_rnn.cuh)."""

import importlib.util
import re
from pathlib import Path

import pytest

# 35_LSTM draws h0 and c0 with torch.randn inside forward: random, so no kernel can match it (refused by name).
PROBLEMS = (
    (3, "37_LSTMCn"),
    (3, "38_LSTMBidirectional"),
    (3, "39_GRU"),
    (3, "41_GRUBidirectional"),
    (3, "42_GRUBidirectionalHidden"),
)


def _episode(problem, tmp_path, fast_protocol):
    from agent.loop import Episode, EpisodeConfig
    from agent.policies import make_policy
    from sandbox import EvalConfig

    config = EpisodeConfig(device="cuda", max_turns=12, eval=EvalConfig(**fast_protocol))
    return Episode(problem, make_policy("heuristic"), tmp_path / "workspace", config).run()


def _written(tmp_path):
    """The episode's CUDA kernels and model_new.py, as written."""
    kernels = tmp_path / "workspace" / "kernels"
    return (kernels / "fused.cu").read_text(), (tmp_path / "workspace" / "model_new.py").read_text()


def _is_rnn_kernel_without_torch(kernel, model_new, tmp_path):
    """The kernels use the RNN family's template, no PyTorch in them, and ModelNew calls the fused op."""
    return (
        not re.search(r"torch::|\bat::|#include <(torch|ATen|c10)", kernel)
        and "ks_rnn<" in kernel
        and (tmp_path / "workspace" / "kernels" / "ks_rnn.cuh").exists()
        and "ops.fused(" in model_new
    )


def _assert_correct_rnn_solution(traj, tmp_path):
    """The episode submitted a correct, rewarded solution whose kernel is the RNN family's, with no torch compute."""
    verdict = traj.verdict
    assert traj.stop_reason == "submitted", traj.stop_reason
    assert verdict["status"] == "ok" and verdict["correct"], verdict.get("log", "")[-2000:]
    assert verdict["reward"] >= 1, verdict["reward"]
    kernel, model_new = _written(tmp_path)
    assert _is_rnn_kernel_without_torch(kernel, model_new, tmp_path), kernel[:2000]


@pytest.mark.parametrize("level,name", PROBLEMS, ids=[f"level{level}/{name}" for level, name in PROBLEMS])
def test_the_rnn_family_writes_a_correct_kernel_for_a_kernelbench_problem(
    kernelbench, fast_protocol, record_verdict, tmp_path, level, name
):
    traj = _episode(kernelbench.problem(level, name), tmp_path, fast_protocol)
    record_verdict(f"heuristic (RNN): level{level}/{name}", traj.verdict)
    print(f"{name}: speedup vs eager {traj.verdict.get('speedup_vs_eager')}")
    _assert_correct_rnn_solution(traj, tmp_path)


def _user_modules():
    path = Path(__file__).resolve().parents[1] / "agent" / "test_heuristic_rnn.py"
    spec = importlib.util.spec_from_file_location("cpu_rnn_cases", path)
    cpu = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cpu)
    return {
        "lstm_classifier": cpu.LSTM_CLASSIFIER,
        "gru_hidden": cpu.GRU_HIDDEN,
        "bidirectional_rnn_without_bias": cpu.BIDIRECTIONAL_RNN_WITHOUT_BIAS,
    }


@pytest.mark.parametrize("name", ["lstm_classifier", "gru_hidden", "bidirectional_rnn_without_bias"])
def test_the_rnn_family_writes_correct_kernels_for_user_modules(fast_protocol, record_verdict, tmp_path, name):
    problem = tmp_path / f"{name}.py"
    problem.write_text(_user_modules()[name])
    traj = _episode(problem, tmp_path, fast_protocol)
    record_verdict(f"heuristic (RNN): {name}", traj.verdict)
    _assert_correct_rnn_solution(traj, tmp_path)
