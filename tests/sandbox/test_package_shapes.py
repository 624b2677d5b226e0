"""Shape rules inferred from an operator's calls, with real PyTorch functions standing in for kernels: calls at the
problem's sizes and with each size grown (as the packaging probe makes them), the fake inferred from them, and
that fake run on sizes none of the calls had, against the function itself."""

import pytest
import torch
import torch.nn.functional as F

from sandbox.package import shapes
from sandbox.package.cpp import Op, Param
from sandbox.package.probe_worker import GROWTHS, describe, grown, outputs, sizes_of


def _op(name, params, returns=1):
    typed = [Param(n, "int" if t is int else "torch.Tensor") for n, t in params]
    return Op(name, typed, ["torch.Tensor"] * returns)


def _calls(function, args):
    """The calls the probe records: the problem's, then each size of the arguments grown by each step."""
    calls = [
        {"args": [describe(a) for a in args], "outs": outputs(function(*args)), "source": "problem", "trusted": True}
    ]
    for size in sizes_of(args):
        for step in GROWTHS:
            new = [grown(a, size, size + step) for a in args]
            try:
                result = function(*new)
            except RuntimeError:
                continue
            calls.append({"args": [describe(a) for a in new], "outs": outputs(result), "source": "grown sizes"})
    return calls


def _run_fake(op, fake, args):
    scope = {"torch": torch}
    exec(f"def fake({fake.params}):\n{fake.body}", scope)  # noqa: S102 (the fake the package would hold)
    with torch.device("meta"):
        return scope["fake"](*[a.to("meta") if isinstance(a, torch.Tensor) else a for a in args])


def _assert_like(fake_out, real_out):
    fake_out = fake_out if isinstance(fake_out, tuple) else (fake_out,)
    real_out = real_out if isinstance(real_out, tuple) else (real_out,)
    for f, r in zip(fake_out, real_out, strict=True):
        assert (f.shape, f.dtype) == (r.shape, r.dtype)
        significant = [d for d in range(r.dim()) if r.shape[d] > 1]
        assert [f.stride(d) for d in significant] == [r.stride(d) for d in significant]


def _conv_transpose(x, weight, stride, padding):
    return F.conv_transpose1d(x, weight, stride=stride, padding=padding)


CASES = {
    # A convolution whose kernel size is its weight's: the window rule over another argument's size.
    "conv2d with a weight, stride 2, padding 1": (
        lambda x, w: F.conv2d(x, w, stride=2, padding=1),
        [("x", None), ("weight", None)],
        [torch.randn(2, 4, 17, 12), torch.randn(5, 4, 3, 3)],
        [torch.randn(3, 4, 31, 9), torch.randn(5, 4, 3, 3)],
    ),
    "transposed convolution with stride and padding arguments": (
        _conv_transpose,
        [("x", None), ("weight", None), ("stride", int), ("padding", int)],
        [torch.randn(2, 4, 10), torch.randn(4, 6, 5), 3, 2],
        [torch.randn(5, 4, 23), torch.randn(4, 6, 5), 3, 2],
    ),
    "average pool with kernel and stride arguments": (
        lambda x, k, s: F.avg_pool2d(x, k, s),
        [("x", None), ("kernel", int), ("stride", int)],
        [torch.randn(4, 3, 20, 14), 4, 3],
        [torch.randn(1, 6, 41, 13), 4, 3],
    ),
    "flatten of all but the batch": (
        lambda x: x.flatten(1).clone(),
        [("x", None)],
        [torch.randn(4, 3, 5, 6)],
        [torch.randn(7, 2, 9, 3)],
    ),
    "outputs stored channels last, and an index output": (
        lambda x: (x.contiguous(memory_format=torch.channels_last) * 2, x.flatten(1).argmax(1)),
        [("x", None)],
        [torch.randn(4, 3, 5, 6)],
        [torch.randn(6, 5, 7, 2)],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_inferred_fake_matches_the_kernel_at_sizes_it_never_saw(case):
    function, params, args, unseen = CASES[case]
    op = _op("op", params, returns=len(outputs(function(*args))))
    fake = shapes.infer(op, _calls(function, args), "cpu")
    assert fake.assumption is not None, fake.why
    _assert_like(_run_fake(op, fake, unseen), function(*unseen))


def test_the_pool_rule_is_written_with_the_arguments_names():
    op = _op("pool", [("x", None), ("kernel", int), ("stride", int)])
    fake = shapes.infer(op, _calls(lambda x, k, s: F.max_pool2d(x, k, s), [torch.randn(2, 3, 16, 11), 3, 2]), "cpu")
    assert "(x.shape[2] - kernel) // stride + 1, (x.shape[3] - kernel) // stride + 1)" in fake.body


def test_a_size_that_depends_on_the_values_has_no_rule_and_says_so():
    op = _op("above", [("x", None)])
    fake = shapes.infer(op, _calls(lambda x: x[x > 1.0], [torch.randn(64, 128)]), "cpu")
    assert fake.assumption is None
    assert "no expression of the arguments' sizes gives dimension 0 of output 0" in fake.why
    assert "raise NotImplementedError(" in fake.body


def test_an_operator_never_called_has_no_rule():
    fake = shapes.infer(_op("unused", [("x", None)]), [], "cpu")
    assert fake.assumption is None and "not called" in fake.why


def test_a_strided_view_as_output_has_no_layout_rule():
    op = _op("every_other", [("x", None)])
    fake = shapes.infer(op, _calls(lambda x: x[:, ::2], [torch.randn(6, 8)]), "cpu")
    assert fake.assumption is None and "not a dense tensor" in fake.why
