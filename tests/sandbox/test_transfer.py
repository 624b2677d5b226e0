"""Tensors between the sandbox's workers: safetensors files that keep order, dtype, shape and values, and refuse
anything else with a clear error."""

import pytest
import torch
from safetensors.torch import load_file

from sandbox.transfer import load_tensors, save_tensors


def test_tensors_round_trip_in_order_with_their_dtypes_shapes_and_values_views_included(tmp_path):
    base = torch.randn(6, 8)
    tensors = [
        base.t(),
        base[::2, 1:3],
        torch.tensor(3.5),
        torch.arange(7),
        torch.rand(4) > 0.5,
        torch.randn(2, 3, dtype=torch.bfloat16),
        torch.empty(0, 5),
        torch.randn(3, dtype=torch.complex64),
    ]
    save_tensors(tensors, tmp_path / "t.safetensors")
    back = load_tensors(tmp_path / "t.safetensors")
    assert [(t.dtype, t.shape) for t in back] == [(t.dtype, t.shape) for t in tensors]
    assert all(torch.equal(a, b) for a, b in zip(tensors, back))
    # A standard safetensors file: any reader of the format opens it.
    assert sorted(load_file(str(tmp_path / "t.safetensors")), key=int) == [str(i) for i in range(len(tensors))]


def test_a_file_that_is_not_ours_is_refused_with_a_clear_error(tmp_path):
    (tmp_path / "junk").write_bytes(b"\x00" * 64)
    with pytest.raises(ValueError, match="is not a tensor file written by the harness"):
        load_tensors(tmp_path / "junk")
    from safetensors.torch import save_file

    save_file({"weights": torch.ones(2)}, str(tmp_path / "other.safetensors"))
    with pytest.raises(ValueError, match="is not a tensor file written by the harness"):
        load_tensors(tmp_path / "other.safetensors")
