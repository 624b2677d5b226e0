"""The DAG planner's index algebra (agent/heuristic/dag/indexing.py): flat indices composed through views, cats and
reshapes come out as the digits they stand for, never a division of a division, and always the same numbers as the
literal C they replace."""

import random
import re

import pytest
import torch

from agent.heuristic.analyze import analyze
from agent.heuristic.codegen import workspace_files
from agent.heuristic.dag.indexing import Parser, text
from agent.heuristic.plan import make_plan


def simplified(source, ranges=None):
    parsed = Parser({}, {"i": (0, None), **(ranges or {})}).parse(source)
    return None if parsed is None else text(parsed)


@pytest.mark.parametrize(
    "source,expected",
    [
        # a contiguous view's coordinates put back together
        ("((i) / 512LL) * 512LL + ((i) % 512LL)", "i"),
        ("((i) / 1024LL) * 1024LL + (((i) / 32LL) % 32LL) * 32LL + ((i) % 32LL)", "i"),
        # a digit of a digit
        ("(((i) / 8LL) % 4LL) / 2LL", "((i / 16LL) % 2LL)"),
        ("(((i) / 8LL) % 16LL) % 4LL", "((i / 8LL) % 4LL)"),
        # a reshape's coordinate of a cat's part: (i / 64) * 32 + c, c in [0, 32), divided by 32
        ("((((i) / 64LL) * 32LL + (c < 0 ? 0 : c)) / 32LL) % 128LL", "((i / 64LL) % 128LL)"),
        ("((((i) / 64LL) * 32LL + (c < 0 ? 0 : c)) / 16384LL)", "(i / 32768LL)"),
        ("((((i) / 64LL) * 32LL + (c < 0 ? 0 : c)) % 32LL)", "(c < 0 ? 0 : c)"),
        # a permutation is what it is
        (
            "((i) / 32LL) % 4LL * 128LL + ((i) / 128LL) * 32LL + (i) % 32LL",
            "((i / 32LL) % 4LL) * 128LL + (i / 128LL) * 32LL + (i % 32LL)",
        ),
        # a flip
        ("(15LL - ((i) % 16LL)) * 2LL", "-(i % 16LL) * 2LL + 30"),
    ],
)
def test_composed_index_maps_simplify_to_the_digits_they_stand_for(source, expected):
    assert simplified(source, {"(c < 0 ? 0 : c)": (0, 31)}) == expected


def test_values_of_unknown_sign_keep_their_divisions_as_written():
    # n may be negative: C's division truncates toward zero, so (n * 4 + 3) / 4 is not n
    assert simplified("(n * 4LL + 3LL) / 4LL") == "((n * 4LL + 3) / 4LL)"
    # an unreadable subexpression is one opaque value; a top-level one leaves the text alone
    assert simplified("(k < 3 ? 0 : k) * 4LL + (i) % 4LL") == "(k < 3 ? 0 : k) * 4LL + (i % 4LL)"
    assert simplified("k < 3 ? 0 : k") is None


def _c_value(source, i):
    """SOURCE evaluated as C would for non-negative operands (int64 / and % on non-negative values)."""
    python = re.sub(r"(\w+|\))\s*/\s*", r"\1 // ", source.replace("LL", ""))
    return eval(python, {}, {"i": i})  # noqa: S307 -- text this test wrote


def test_random_compositions_give_the_numbers_of_the_literal_c():
    rng = random.Random(0)
    for _ in range(1500):
        e = "i"
        for _ in range(rng.randint(1, 4)):
            c = rng.choice([1, 2, 3, 4, 6, 8, 12, 16, 32, 64])
            g = rng.choice([2, 4, 8, 32])
            e = rng.choice(
                [
                    f"(({e}) / {c}LL)",
                    f"(({e}) % {c}LL)",
                    f"(({e}) * {c}LL)",
                    f"(({e}) + {c}LL)",
                    f"(({e}) / {c}LL) * {c * 2}LL + (({e}) % {c}LL)",
                    f"(({e}) / {c}LL) * {g}LL + (({e}) % {g}LL)",
                    f"({c * 64 - 1}LL - (({e}) % {c * 64}LL))",
                ]
            )
        out = simplified(e)
        for i in rng.sample(range(100000), 12):
            assert _c_value(out, i) == _c_value(e, i), (e, out, i)


ROTARY = """import torch
import torch.nn as nn


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    def forward(self, qk, cos, sin):
        q = qk.view(qk.shape[0], qk.shape[1], 4, 64).transpose(1, 2)
        return q * cos + rotate_half(q) * sin


def get_inputs():
    return [torch.randn(2, 128, 256), torch.randn(128, 64), torch.randn(128, 64)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_a_rotary_embeddings_kernel_divides_its_flat_index_only_by_constants_of_its_own_shape(tmp_path, device):
    problem = tmp_path / "rotary.py"
    problem.write_text(ROTARY)
    plan = make_plan(analyze(str(problem)))
    files = workspace_files(plan, device, ROTARY)
    source = next(v for k, v in files.items() if k.endswith(("fused.cpp", "fused.cu")))
    indices = re.findall(r"const int64_t j\d+ = (.*);", source)
    assert indices
    # no index divides another index variable or a sum (a reshape's division of a cat's index of a view's): only
    # the kernel's own flat index i is divided
    divided = [e for e in indices if re.search(r"(\bj\d+\)?|\+[^()]*\))\s*[/%]", e)]
    assert not divided, divided


def _dividends(expr):
    """The left operands of EXPR's divisions and modulos: the parenthesized group or name before each."""
    found = []
    for at in (m.start() for m in re.finditer(r"\s[/%]\s", expr)):
        end, depth, start = at, 0, at
        while start > 0 and (depth or expr[start - 1] not in "(+*"):
            start -= 1
            depth += {")": 1, "(": -1}.get(expr[start], 0)
        found.append(expr[start:end])
    return found


PATCHES = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        return F.unfold(x, kernel_size=3, stride=3).transpose(1, 2) * 2.0


def get_inputs():
    return [torch.randn(2, 3, 15, 21)]


def get_init_inputs():
    return []
"""


def test_an_index_tensors_coordinates_are_read_without_dividing_them_again(tmp_path, cpu_solution):
    # unfold reads x[b, c, rows[..], cols[..]] through index tensors: a coordinate torch accepts lies in its dim, so
    # the flat index they make is x's own and is not split back into coordinates (divisions of a loaded value)
    solution, model, files = cpu_solution(PATCHES)
    indices = re.findall(r"const int64_t j\d+ = (.*);", files["kernels/fused.cpp"])
    assert [e for e in indices if re.search(r"\bv\d+", e)], indices
    divided = [e for e in indices if any(re.search(r"\bv\d+", d) for d in _dividends(e))]
    assert not divided, divided
    x = torch.randn(3, 3, 15, 21)
    with torch.no_grad():
        torch.testing.assert_close(solution(x), model(x))
