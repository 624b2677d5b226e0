"""The heuristic's CUDA kernels on other input sizes (issue 22): for a GEMM with an epilogue, a row reduction and a
convolution, the sandbox's shape trials (the batch dimension halved and doubled) pass, so the verdict says
shape_general, and the speedup at the problem's own shapes is printed beside it."""

import pytest

pytestmark = pytest.mark.gpu

FAMILIES = (
    (2, "9_Matmul_Subtract_Multiply_ReLU"),  # cuBLAS GEMM + fused epilogue: M from the input
    (1, "23_Softmax"),  # a row reduction: rows from the input
    (2, "1_Conv2D_ReLU_BiasAdd"),  # cuDNN convolution + epilogue: N from the input
    # Its doubled batch's convolution output holds 2.4e9 elements, past a cuDNN tensor's 2^31: run in slices.
    (2, "65_Conv2d_AvgPool_Sigmoid_Sum"),
)


@pytest.mark.parametrize("level,name", FAMILIES, ids=[f"level{level}/{name}" for level, name in FAMILIES])
def test_the_heuristics_kernels_are_correct_at_other_batch_sizes(
    kernelbench, fast_protocol, record_verdict, tmp_path, level, name
):
    from agent.loop import Episode, EpisodeConfig
    from agent.policies import make_policy
    from sandbox import EvalConfig

    problem = kernelbench.problem(level, name)
    config = EpisodeConfig(device="cuda", max_turns=12, eval=EvalConfig(**fast_protocol, shape_check=True))
    traj = Episode(problem, make_policy("heuristic"), tmp_path / "workspace", config).run()
    verdict = traj.verdict
    record_verdict(f"heuristic, shape trials: level{level}/{name}", verdict)
    assert verdict["status"] == "ok" and verdict["correct"], verdict.get("log", "")[-2000:]
    assert len(verdict["shapes_checked"]) >= 2, verdict["shapes_checked"]
    assert verdict["shape_general"] is True, (verdict["failing_shape"], verdict["shape_failure"][-2000:])
    print(f"{name}: shapes {verdict['shapes_checked']}, speedup vs eager {verdict.get('speedup_vs_eager')}")
