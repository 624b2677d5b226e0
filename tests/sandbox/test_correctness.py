"""sandbox.correctness.compare: shapes, dtypes, NaN/Inf, allclose-style tolerances, the worst error reported."""

import math

import pytest
import torch

from sandbox.correctness import compare

ATOL, RTOL = 1e-2, 1e-2


def test_equal_outputs_pass_with_zero_error():
    x = torch.randn(32, 16)
    c = compare([x], [x.clone()], ATOL, RTOL)
    assert c.ok and c.reason == "" and c.max_abs_error == 0.0 and c.mismatched == 0 and c.compared == x.numel()


def test_shape_mismatch():
    c = compare([torch.zeros(4, 5)], [torch.zeros(5, 4)], ATOL, RTOL)
    assert not c.ok and "shape" in c.reason and "(4, 5)" in c.reason and "(5, 4)" in c.reason


def test_dtype_mismatch():
    c = compare([torch.zeros(3)], [torch.zeros(3, dtype=torch.float64)], ATOL, RTOL)
    assert not c.ok and "dtype" in c.reason and "float64" in c.reason


def test_number_of_outputs():
    c = compare([torch.zeros(3), torch.zeros(3)], [torch.zeros(3)], ATOL, RTOL)
    assert not c.ok and "2 output" in c.reason


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_inf_never_pass(bad):
    ref = torch.ones(10)
    out = ref.clone()
    out[3] = bad
    c = compare([ref], [out], ATOL, RTOL)
    assert not c.ok and "NaN/Inf" in c.reason and c.mismatched == 1


def test_nan_where_the_reference_has_nan_passes_but_not_elsewhere():
    ref = torch.tensor([1.0, math.nan, math.inf, -math.inf])
    assert compare([ref], [ref.clone()], ATOL, RTOL).ok
    swapped = torch.tensor([1.0, math.inf, math.nan, -math.inf])
    c = compare([ref], [swapped], ATOL, RTOL)
    assert not c.ok and "positions or signs" in c.reason
    sign = torch.tensor([1.0, math.nan, -math.inf, -math.inf])
    assert not compare([ref], [sign], ATOL, RTOL).ok


def test_tolerance_is_allclose_style():
    ref = torch.tensor([100.0, 0.0, -5.0])
    # |c - r| <= atol + rtol * |r|: 1.01 allowed at 100, 0.01 at 0, 0.06 at -5.
    assert compare([ref], [ref + torch.tensor([1.0, 0.009, 0.059])], ATOL, RTOL).ok
    c = compare([ref], [ref + torch.tensor([1.0, 0.011, 0.0])], ATOL, RTOL)
    assert not c.ok and c.mismatched == 1 and "1 of 3 values" in c.reason


def test_worst_error_is_reported():
    ref = torch.zeros(100)
    out = ref.clone()
    out[7] = 0.5
    out[42] = -2.0
    c = compare([ref], [out], ATOL, RTOL)
    assert not c.ok and c.mismatched == 2
    assert c.max_abs_error == pytest.approx(2.0)
    assert "max abs error 2" in c.reason
    ok = compare([torch.full((4,), 2.0)], [torch.full((4,), 2.001)], ATOL, RTOL)
    assert (
        ok.ok
        and ok.max_abs_error == pytest.approx(0.001, rel=1e-3)
        and ok.max_rel_error == pytest.approx(0.0005, rel=1e-3)
    )


def test_the_worst_error_spans_every_output():
    a, b = torch.zeros(3), torch.zeros(3)
    c = compare([a, b], [a + 0.001, b + 0.005], ATOL, RTOL)
    assert c.ok and c.max_abs_error == pytest.approx(0.005) and c.compared == 6
    bad = compare([a, b], [a, b + 1.0], ATOL, RTOL)
    assert not bad.ok and bad.reason.startswith("output 1:")


def test_integer_outputs_compare_exactly_within_atol():
    ref = torch.tensor([1, 2, 3])
    assert compare([ref], [ref.clone()], 0, 0).ok
    assert not compare([ref], [torch.tensor([1, 2, 4])], 0, 0).ok


def test_low_precision_outputs():
    ref = torch.randn(64).half()
    assert compare([ref], [ref.clone()], ATOL, RTOL).ok
    assert not compare([ref], [(ref.float() + 1).half()], ATOL, RTOL).ok


def test_the_finite_check_of_a_large_output_reads_it_in_chunks_and_finds_a_nan_in_any_of_them():
    import torch

    from sandbox.workers.common import all_finite

    t = torch.zeros(10, 7)
    assert all_finite(t, chunk=8)
    for flat_index in (0, 33, 69):
        bad = t.clone()
        bad.view(-1)[flat_index] = float("nan")
        assert not all_finite(bad, chunk=8)
    inf_in_a_view = torch.zeros(7, 10).t()  # not contiguous: checked whole
    inf_in_a_view[9, 6] = float("inf")
    assert not all_finite(inf_in_a_view, chunk=8)
