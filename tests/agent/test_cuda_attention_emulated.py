"""The attention family's CUDA kernels (ks_attention.cuh), the tiled one and the row one, run on CPU threads through
tests/agent/cuda_emulation.h and checked against torch: ragged shapes, causal, masks read through their strides, NaN
and fully masked rows. nvcc compiles them in the attention tests; this checks what they compute."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

HEADER = Path(__file__).resolve().parents[2] / "agent" / "heuristic" / "dag" / "ks_attention.cuh"
EMULATION = Path(__file__).resolve().parent / "cuda_emulation.h"
LAUNCH = re.compile(r"(ks_attention\w*_kernel<[^;]*?>)<<<(.*?)>>>\((.*?)\);", re.S)

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

DRIVER = """#include "ks_attention.cuh"
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

static std::vector<float> load(const char* path, size_t n) {
    std::vector<float> data(n);
    FILE* f = std::fopen(path, "rb");
    if (!f || std::fread(data.data(), sizeof(float), n, f) != n) std::abort();
    std::fclose(f);
    return data;
}

int main(int argc, char** argv) {
    // argv: folder, sms, then per case the kernel's shape is compiled in
    const std::string dir = argv[1];
    ks_emulated_sms = std::atoi(argv[2]);
    const int64_t batch = BATCH, lq = LQ, lk = LK;
    auto q = load((dir + "/q").c_str(), batch * lq * E_);
    auto k = load((dir + "/k").c_str(), batch * lk * E_);
    auto v = load((dir + "/v").c_str(), batch * lk * EV_);
    std::vector<float> out(batch * lq * EV_);
    std::unique_ptr<MASK_T[]> mask(new MASK_T[MASK_NUMEL]);  // (not a vector: vector<bool> has no data())
    const MASK_T* mp = nullptr;
    if (MASK_KIND) {
        auto raw = load((dir + "/mask").c_str(), MASK_NUMEL);
        for (size_t n = 0; n < raw.size(); ++n) mask[n] = (MASK_T)raw[n];
        mp = mask.get();
    }
    const KsMask mm = MASK_MAP;
    ks_attention<E_, EV_, TILE_, MASK_T>(q.data(), k.data(), v.data(), mp, out.data(), batch, lq, lk, SCALE, CAUSAL,
                                         MASK_KIND, MASKED_ROW, mm, nullptr);
    FILE* f = std::fopen((dir + "/out").c_str(), "wb");
    std::fwrite(out.data(), sizeof(float), out.size(), f);
    std::fclose(f);
    return 0;
}
"""


BUILT = {}  # defines -> the driver built for them: both kernels of a case run from one build


def build(tmp_path, **defines):
    """The driver for one kernel configuration, compiled against the emulation (its launches rewritten)."""
    key = tuple(sorted(defines.items()))
    if key in BUILT:
        return BUILT[key]
    header = LAUNCH.sub(r"ks_emulated_launch(\2, [&] { \1(\3); });", HEADER.read_text())
    assert "<<<" not in header, "a launch the test could not rewrite"
    (tmp_path / "ks_attention.cuh").write_text(header)
    (tmp_path / "cuda_runtime.h").write_text(f'#include "{EMULATION}"\n')
    (tmp_path / "driver.cpp").write_text(DRIVER)
    flags = [f"-D{name}={value}" for name, value in defines.items()]
    binary = tmp_path / "driver"
    command = ["g++", "-std=c++20", "-O1", "-pthread", "-I", str(tmp_path), *flags, str(tmp_path / "driver.cpp")]
    result = subprocess.run([*command, "-o", str(binary)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    BUILT[key] = binary
    return binary


def run(binary, tmp_path, sms, q, k, v, mask=None):
    for name, tensor in (("q", q), ("k", k), ("v", v)) + ((("mask", mask.float()),) if mask is not None else ()):
        tensor.contiguous().numpy().astype("float32").tofile(tmp_path / name)
    result = subprocess.run([str(binary), str(tmp_path), str(sms)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    out = torch.from_numpy(__import__("numpy").fromfile(tmp_path / "out", dtype="float32"))
    return out.reshape(*q.shape[:-1], v.shape[-1])


def configuration(q, k, v, causal, mask_kind="0", mask_numel=1, mask_map="KsMask{0, {}, {}, 0, 0}", masked_row="0.f"):
    batch = q.shape[0] * q.shape[1]
    return dict(
        BATCH=batch, LQ=q.shape[2], LK=k.shape[2], E_=q.shape[3], EV_=v.shape[3], TILE_=32,
        MASK_T="bool" if mask_kind == "2" else "float", MASK_KIND=mask_kind, MASK_NUMEL=mask_numel,
        MASK_MAP=f"'{mask_map}'".strip("'"), SCALE=f"{1 / q.shape[3] ** 0.5!r}f", CAUSAL=str(causal).lower(),
        MASKED_ROW=masked_row,
    )  # fmt: skip


# sms 1: every launch takes the tiled kernel (its blocks fill the device); 100000: the row kernel, G threads a row
KERNELS = [pytest.param(1, id="tiled"), pytest.param(100_000, id="rows")]


@pytest.mark.parametrize("sms", KERNELS)
def test_causal_attention_of_ragged_shapes_matches_torch(tmp_path, sms):
    # 70 queries against 150 keys (neither a tile's multiple), head dims 40 and 24 (not a multiple of 16), causal
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 70, 40), torch.randn(1, 2, 150, 40), torch.randn(1, 2, 150, 24)
    q[0, 1, 9] = float("nan")  # a NaN query row is NaN out, the others untouched
    binary = build(tmp_path, **configuration(q, k, v, causal=True))
    expected = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True).float()
    got = run(binary, tmp_path, sms, q, k, v)
    assert torch.isnan(got[0, 1, 9]).all() and not torch.isnan(got[0, 1, :9]).any()
    torch.testing.assert_close(got, expected, equal_nan=True, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("sms", KERNELS)
def test_a_key_padding_mask_read_through_its_strides_matches_torch_with_empty_rows_zero(tmp_path, sms):
    # heads 64 wide (4 rows x 4 keys a thread), a bool key padding [batch, 1, 1, lk] read with stride 0 over heads and
    # queries; the second sequence has length 0: SDPA's rows of zeros
    torch.manual_seed(1)
    q, k, v = torch.randn(2, 3, 96, 64), torch.randn(2, 3, 130, 64), torch.randn(2, 3, 130, 64)
    lengths = torch.tensor([77, 0])
    keep = torch.arange(130)[None, :] < lengths[:, None]  # [2, 130]
    mask_map = "KsMask{2, {2LL, 3LL}, {130LL, 0LL}, 0LL, 1LL}"
    binary = build(tmp_path, **configuration(q, k, v, False, "2", keep.numel(), mask_map))
    got = run(binary, tmp_path, sms, q, k, v, keep)
    expected = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=keep[:, None, None, :])
    expected = torch.nan_to_num(expected.float(), nan=0.0)  # torch's math path leaves NaN where its kernels give 0
    assert (got[1] == 0).all()
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("sms", KERNELS)
def test_an_additive_mask_on_wide_heads_matches_a_written_out_softmax(tmp_path, sms):
    # heads 96 wide (2 rows x 2 keys a thread), a float [lq, lk] mask added to every head's scores (batch stride 0),
    # one row fully -inf: NaN, as softmax over -inf gives
    torch.manual_seed(2)
    q, k, v = torch.randn(1, 4, 50, 96), torch.randn(1, 4, 64, 96), torch.randn(1, 4, 64, 96)
    bias = torch.randn(50, 64)
    bias[7] = float("-inf")
    mask_map = "KsMask{1, {4LL}, {0LL}, 64LL, 1LL}"
    binary = build(tmp_path, **configuration(q, k, v, False, "1", bias.numel(), mask_map, "NAN"))
    got = run(binary, tmp_path, sms, q, k, v, bias)
    scores = q.double() @ k.double().transpose(-1, -2) / 96**0.5 + bias.double()
    expected = (torch.softmax(scores, -1) @ v.double()).float()
    assert torch.isnan(got[0, :, 7]).all() and torch.isnan(expected[0, :, 7]).all()
    torch.testing.assert_close(got, expected, equal_nan=True, rtol=1e-4, atol=1e-5)
