"""The heuristic policy end to end on the GPU: KernelBench problems of levels 1-3 (elementwise, row-wise and group
norms, pools, cuBLAS GEMM and cuDNN convolution with their epilogues, and chains of such stages), one episode each,
reaching a correct solution through the same tools a model uses."""
import re

import pytest

PROBLEMS = (
    (1, "1_Square_matrix_multiplication_"),
    (1, "9_Tall_skinny_matrix_multiplication_"),
    (1, "21_Sigmoid"),
    (1, "53_Min_reduction_over_a_dimension"),
    (2, "9_Matmul_Subtract_Multiply_ReLU"),
    (2, "53_Gemm_Scaling_Hardtanh_GELU"),
    (2, "81_Gemm_Swish_Divide_Clamp_Tanh_Clamp"),
    (1, "63_conv_standard_2D__square_input__square_kernel"),
    (1, "57_conv_transposed_2D__square_input__square_kernel"),
    (2, "1_Conv2D_ReLU_BiasAdd"),
    (1, "35_GroupNorm_"),
    (2, "99_Matmul_GELU_Softmax"),
    (2, "30_Gemm_GroupNorm_Hardtanh"),
    (1, "42_Max_Pooling_2D"),
    (2, "10_ConvTranspose2d_MaxPool_Hardtanh_Mean_Tanh"),
    (3, "1_MLP"),
    (2, "33_Gemm_Scale_BatchNorm"),
)

@pytest.mark.parametrize("level,name", PROBLEMS, ids=[f"level{level}/{name}" for level, name in PROBLEMS])
def test_the_heuristic_writes_a_correct_kernel_for_a_kernelbench_problem(kernelbench, fast_protocol, record_verdict,
                                                                        tmp_path, level, name):
    from agent.loop import Episode, EpisodeConfig
    from agent.policies import make_policy
    from sandbox import EvalConfig

    problem = kernelbench.problem(level, name)
    config = EpisodeConfig(device="cuda", max_turns=12, eval=EvalConfig(**fast_protocol))
    traj = Episode(problem, make_policy("heuristic"), tmp_path / "workspace", config).run()
    verdict = traj.verdict
    record_verdict(f"heuristic: level{level}/{name}", verdict)
    assert traj.stop_reason == "submitted", traj.stop_reason
    assert verdict["status"] == "ok" and verdict["correct"], verdict.get("log", "")[-2000:]
    assert verdict["reward"] >= 1
    # Written as native kernels: no torch in the kernel files, the work done by the generated op.
    kernel = (tmp_path / "workspace" / "kernels" / "fused.cu").read_text()
    assert not re.search(r"torch::|\bat::|#include <(torch|ATen|c10)", kernel), kernel[:2000]
    assert "ops.fused(" in (tmp_path / "workspace" / "model_new.py").read_text()
