"""The attention family's masks: boolean or additive, of any shape that broadcasts to the scores [*batch, lq, lk]
(key padding [B, 1, 1, lk], per head, [lq, lk], expanded with 0 strides) read through their own strides by the
kernels, run end to end on the CPU target, and the CUDA kernels they make compiled by nvcc; grouped-query attention
(enable_gqa) reading each key head for its group of query heads."""

import shutil

import pytest

from agent.heuristic.analyze import analyze
from agent.heuristic.codegen import workspace_files
from agent.heuristic.plan import make_plan

# The user's module of the issue, smaller: nn.MultiheadAttention's key_padding_mask arrives as a [B, 1, 1, lk] float
# mask broadcast over heads and queries; a length of 0 masks every key of its batch (torch's SDPA gives those rows 0).
MHA_KEY_PADDING = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(32, 4, batch_first=True)

    def forward(self, x, lengths):
        mask = torch.arange(x.shape[1], device=x.device)[None, :] >= lengths[:, None]
        out, _ = self.mha(x, x, x, key_padding_mask=mask, need_weights=False)
        return out

def get_inputs():
    lengths = torch.randint(1, 17, (3,))
    lengths[0] = 0
    return [torch.randn(3, 16, 32), lengths]

def get_init_inputs():
    return []
"""
MHA_CAUSAL_MASK = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(32, 2, batch_first=True)

    def forward(self, x):
        n = x.shape[1]
        causal = torch.triu(torch.full((n, n), float("-inf"), device=x.device), diagonal=1)
        out, _ = self.mha(x, x, x, attn_mask=causal, need_weights=False)
        return out

def get_inputs():
    return [torch.randn(2, 12, 32)]

def get_init_inputs():
    return []
"""
# Masks of every broadcast in one forward, queries and keys of different lengths: a boolean [B, 1, lq, lk] padding of
# queries and keys (a padded query's row is fully masked: 0 in torch), a float [1, 1, lq, lk] bias, a per-head float
# [H, lq, lk] bias, a boolean [lq, lk] band, and a key padding expanded to [B, H, lq, lk] (0 strides).
SDPA_MASKS = """import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, heads, lq, lk):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(1, 1, lq, lk))
        self.head_bias = nn.Parameter(torch.randn(heads, lq, lk))

    def forward(self, q, k, v, q_lengths, k_lengths):
        b, h, lq, _ = q.shape
        lk = k.shape[2]
        q_valid = torch.arange(lq, device=q.device)[None, :] < q_lengths[:, None]
        k_valid = torch.arange(lk, device=q.device)[None, :] < k_lengths[:, None]
        padding = q_valid[:, None, :, None] & k_valid[:, None, None, :]
        band = torch.arange(lk, device=q.device)[None, :] <= torch.arange(lq, device=q.device)[:, None] + 2
        expanded = k_valid[:, None, None, :].expand(b, h, lq, lk)
        return (
            F.scaled_dot_product_attention(q, k, v, attn_mask=padding)
            + F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias)
            + F.scaled_dot_product_attention(q, k, v, attn_mask=self.head_bias)
            + F.scaled_dot_product_attention(q, k, v, attn_mask=band)
            + F.scaled_dot_product_attention(q, k, v, attn_mask=expanded)
        )

def get_inputs():
    q_lengths = torch.randint(1, 11, (2,))
    q_lengths[0] = 4
    return [
        torch.randn(2, 3, 10, 16),
        torch.randn(2, 3, 14, 16),
        torch.randn(2, 3, 14, 8),
        q_lengths,
        torch.randint(1, 15, (2,)),
    ]

def get_init_inputs():
    return [3, 10, 14]
"""
# softmax(q k^T / sqrt(d)) v written out, keys padded with masked_fill: a batch of length 0 has every key masked, and
# written-out softmax gives its rows NaN, as eager does.
HAND_WRITTEN_KEY_PADDING = """import math
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, q, k, v, lengths):
        padded = torch.arange(k.shape[2], device=k.device)[None, :] >= lengths[:, None]
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(padded[:, None, None, :], float("-inf"))
        return torch.softmax(scores, dim=-1) @ v

def get_inputs():
    lengths = torch.randint(1, 13, (3,))
    lengths[1] = 0
    return [torch.randn(3, 2, 8, 16), torch.randn(3, 2, 12, 16), torch.randn(3, 2, 12, 16), lengths]

def get_init_inputs():
    return []
"""
# Heads wider than the attention kernel's registers: two GEMMs around a softmax, the key padding mask read broadcast.
WIDE_HEAD_KEY_PADDING = """import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def forward(self, q, k, v, lengths):
        keep = torch.arange(k.shape[2], device=k.device)[None, :] < lengths[:, None]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep[:, None, None, :])

def get_inputs():
    lengths = torch.randint(1, 9, (2,))
    lengths[0] = 0
    return [torch.randn(2, 2, 6, 136), torch.randn(2, 2, 8, 136), torch.randn(2, 2, 8, 136), lengths]

def get_init_inputs():
    return []
"""

CASES = [
    ("mha_key_padding", MHA_KEY_PADDING, "attention"),
    ("mha_causal_mask", MHA_CAUSAL_MASK, "attention"),
    ("sdpa_masks", SDPA_MASKS, "attention"),
    ("hand_written_key_padding", HAND_WRITTEN_KEY_PADDING, "attention"),
    ("wide_head_key_padding", WIDE_HEAD_KEY_PADDING, "gemm"),
]


@pytest.fixture(scope="module")
def plan_of(tmp_path_factory):
    """plan_of(source) -> the heuristic's plan of SOURCE, made once for the module's tests."""
    plans = {}

    def plan(source):
        if source not in plans:
            problem = tmp_path_factory.mktemp("problem") / "problem.py"
            problem.write_text(source)
            plans[source] = make_plan(analyze(str(problem)))
        return plans[source]

    return plan


@pytest.mark.parametrize("name,source,family", CASES, ids=[case[0] for case in CASES])
def test_a_masked_attention_module_reaches_a_correct_solution(heuristic_episode, tmp_path, name, source, family):
    traj = heuristic_episode(source, name)
    assert traj.stop_reason == "submitted", traj.stop_reason
    verdict = traj.verdict
    assert verdict["status"] == "ok" and verdict["correct"] and verdict["reward"] >= 1, verdict
    described = (tmp_path / "workspace" / "kernels" / "fused.cpp").read_text().splitlines()[0]
    assert "a DAG of" in described and family in described, described


def test_a_key_padding_mask_is_read_through_its_strides_not_expanded(plan_of):
    # [B, lk] stored once; the heads (stride 0) and the queries (row stride 0) are broadcast by the kernel's map
    (kernel,) = [k for k in plan_of(MHA_KEY_PADDING).kernels if k.kind == "attention"]
    assert kernel.layout["inputs"][3].numel == 3 * 16
    assert kernel.layout["mask"] == {"offset": 0, "batch": [[3, 16], [4, 0]], "row": 0, "col": 1}


def test_sdpa_masks_of_every_broadcast_keep_their_own_size(plan_of):
    plan = plan_of(SDPA_MASKS)
    masks = [k.layout["inputs"][3] for k in plan.kernels if k.kind == "attention"]
    assert sorted(m.numel for m in masks) == sorted([2 * 10 * 14, 10 * 14, 3 * 10 * 14, 10 * 14, 2 * 14])
    zeroed = workspace_files(plan, "cpu", SDPA_MASKS)["kernels/fused.cpp"]
    assert zeroed.count(", 0.f, KsMask{") == 5  # SDPA's fully masked rows are 0


def test_a_written_out_softmax_keeps_eagers_nan_for_a_fully_masked_row(plan_of):
    source = workspace_files(plan_of(HAND_WRITTEN_KEY_PADDING), "cpu", HAND_WRITTEN_KEY_PADDING)
    assert ", NAN, KsMask{" in source["kernels/fused.cpp"]


CAUSAL_SDPA = """import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

def get_inputs():
    return [torch.randn(2, 2, 40, 16), torch.randn(2, 2, 40, 16), torch.randn(2, 2, 40, 16)]

def get_init_inputs():
    return []
"""


NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="no nvcc on this machine")
@pytest.mark.parametrize(
    "name,source",
    [
        ("sdpa_masks", SDPA_MASKS),
        ("hand_written_key_padding", HAND_WRITTEN_KEY_PADDING),
        ("causal_sdpa", CAUSAL_SDPA),
    ],
)
def test_the_masked_attention_kernels_compile_with_nvcc(plan_of, nvcc_compile, name, source):
    # (no GEMM in these: cuBLAS's headers may be missing here; tests/gpu runs nn.MultiheadAttention on the GPU host)
    files = workspace_files(plan_of(source), "cuda", source)
    assert "cublas" not in files["kernels/fused.cu"] and "KsMask{" in files["kernels/fused.cu"]
    result = nvcc_compile(files)
    assert result.returncode == 0, result.stderr[-3000:]


def test_a_nan_in_a_query_or_a_key_gives_torchs_nan_rows(cpu_solution):
    """A NaN query row is NaN out, and a NaN key makes NaN every row that sees it: the running max lets NaN win (a
    comparison alone skipped the tile and gave the row SDPA's 0 for a fully masked row)."""
    import torch

    solution, _, _ = cpu_solution(CAUSAL_SDPA)
    q, k, v = (torch.randn(2, 2, 40, 16) for _ in range(3))
    q[0, 1, 5] = float("nan")
    k[1, 0, 33] = float("nan")  # causal: rows 33.. of that head see it
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    got = solution(q, k, v)
    assert torch.isnan(expected[0, 1, 5]).all() and torch.isnan(expected[1, 0, 33:]).all()
    assert not torch.isnan(expected[1, 0, :33]).any()
    torch.testing.assert_close(got, expected, equal_nan=True, rtol=1e-4, atol=1e-5)


# Shapes the CPU kernel's tiles and query blocks do not divide: 70 queries, 150 keys (64 a tile), head dims 36 and 20
# (not multiples of a vector), causal with lq != lk, a boolean key padding with a batch of length 0 (SDPA's 0 rows), a
# boolean band read through its row stride, and 3 queries (few enough for the row kernel).
RAGGED_SDPA = """import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def forward(self, q, k, v, lengths):
        lq, lk = q.shape[2], k.shape[2]
        keep = (torch.arange(lk, device=q.device)[None, :] < lengths[:, None])[:, None, None, :]
        band = torch.arange(lk, device=q.device)[None, :] <= torch.arange(lq, device=q.device)[:, None] + 5
        rows = torch.cat(
            [
                F.scaled_dot_product_attention(q, k, v, is_causal=True),
                F.scaled_dot_product_attention(q, k, v, attn_mask=keep),
                F.scaled_dot_product_attention(q, k, v, attn_mask=band),
            ],
            -1,
        )
        few = F.scaled_dot_product_attention(q[:, :, :3], k, v, attn_mask=keep)
        return torch.cat([rows, torch.cat([few, few, few], -1)], 2)

def get_inputs():
    return [torch.randn(2, 3, 70, 36), torch.randn(2, 3, 150, 36), torch.randn(2, 3, 150, 20), torch.tensor([0, 97])]

def get_init_inputs():
    return []
"""


def ragged_reference(q, k, v, lengths):
    """RAGGED_SDPA's forward in float64."""

    namespace = {}
    exec(RAGGED_SDPA, namespace)  # noqa: S102 -- the test's own module
    model = namespace["Model"]()
    return model(q.double(), k.double(), v.double(), lengths).float()


def test_ragged_shapes_match_torch_and_a_masked_keys_value_never_reaches_a_row(cpu_solution):
    """Tiles and blocks of any size agree with SDPA in float64; a NaN value at a key a row does not see (masked, or
    after it under is_causal) leaves that row as it was, the kernels skipping masked keys (torch's CPU kernels
    multiply it by 0 and give NaN), and makes NaN the rows that do see it."""
    import torch

    solution, _, _ = cpu_solution(RAGGED_SDPA)
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 70, 36), torch.randn(2, 3, 150, 36), torch.randn(2, 3, 150, 20)
    lengths = torch.tensor([0, 97])
    expected = ragged_reference(q, k, v, lengths)
    torch.testing.assert_close(solution(q, k, v, lengths), expected, rtol=1e-4, atol=1e-5)
    assert (expected[0, :, :, 20:40] == 0).all()  # batch 0's padding masks every key: SDPA's 0 rows

    v[1, 2, 50] = float("nan")  # batch 1 keeps keys < 97: the key padding's rows all see key 50
    got = solution(q, k, v, lengths)
    clean = v.clone()
    clean[1, 2, 50] = 0.0
    expected = ragged_reference(q, k, clean, lengths)
    expected[1, 2, 50:70, 0:20] = float("nan")  # causal: rows 50.. see key 50
    expected[1, 2, :, 20:40] = float("nan")
    expected[1, 2, 45:70, 40:60] = float("nan")  # the band: rows 45.. see key 50
    expected[1, 2, 70:] = float("nan")  # the 3 queries' key padding
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5, equal_nan=True)


# scaled_dot_product_attention's enable_gqa: 8 query heads over 2 key/value heads, with an ALiBi bias per query head,
# and a head too wide for the attention kernel (its GEMMs path) over 3 key heads.
GROUPED_QUERY_SDPA = """import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, heads=8):
        super().__init__()
        slopes = torch.tensor([2 ** (-8 * (i + 1) / heads) for i in range(heads)])
        pos = torch.arange(48)
        self.register_buffer("alibi", -slopes[:, None, None] * (pos[None, :] - pos[:, None]).abs()[None].float())

    def forward(self, q, k, v, wide_q, wide_kv):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=self.alibi, enable_gqa=True)
        wide = F.scaled_dot_product_attention(wide_q, wide_kv, wide_kv, is_causal=True, enable_gqa=True)
        return out.sum(-1) + wide.mean(-1)[:, :1]

def get_inputs():
    return [torch.randn(2, 8, 48, 32), torch.randn(2, 2, 48, 32), torch.randn(2, 2, 48, 32),
            torch.randn(2, 6, 48, 320), torch.randn(2, 3, 48, 320)]

def get_init_inputs():
    return []
"""


def test_grouped_query_attention_shares_each_key_head_among_its_query_heads(cpu_solution):
    import torch

    solution, model, files = cpu_solution(GROUPED_QUERY_SDPA)
    assert "attention" in files["binding.cpp"].split("\n", 1)[0]
    namespace = {}
    exec(GROUPED_QUERY_SDPA, namespace)  # noqa: S102 -- the test's own module
    inputs = namespace["get_inputs"]()
    torch.testing.assert_close(solution(*inputs), model(*inputs), rtol=1e-4, atol=1e-4)
