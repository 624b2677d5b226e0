"""The seed catalogue: the crawl of torch, torch.nn.functional, torch.nn and transformers finds at least 150
distinct operators, each with its class, how to build it, valid input shapes and dtypes."""

import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from training.synthesis.compose import Input, instantiate, render
from training.synthesis.dedup import fingerprint
from training.synthesis.seed import CLASSES, PROBE_SHAPES, Seed
from training.synthesis.seeds import catalogue

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def crawled():
    return catalogue(refresh=True)  # a real crawl, not the cache (and it refreshes the cache for the others)


def single_op_problem(seed):
    layout = seed.layouts[0]
    shape = PROBE_SHAPES[layout]
    step = instantiate(seed, shape, random.Random(0), "tiny", "s0", "y1")
    return render(seed.name, [Input("x", shape[1:], seed.domain)], [step], shape[0])


def test_the_crawl_finds_at_least_150_distinct_seeds(crawled):
    names = [s.name + ("#loss" if s.op_class == "loss" else "") for s in crawled]
    assert len(names) == len(set(names)) >= 150
    # Distinct as computations, not only as names: one op graph per seed (aliases such as torch.div and
    # torch.true_divide, or nn.ReLU and F.relu, count once).
    graphs = {fingerprint(single_op_problem(s)) for s in crawled if not s.stochastic}
    assert len(graphs) >= 150


def test_seeds_come_from_every_source_and_cover_the_transformer_blocks(crawled):
    origins = Counter(s.origin for s in crawled)
    assert set(origins) == {"torch", "torch.nn.functional", "torch.nn", "transformers", "blocks"}
    names = {s.name for s in crawled}
    for expected in (
        "nn.Conv2d",
        "nn.LayerNorm",
        "F.gelu",
        "torch.cumsum",
        "torch.logsumexp",
        "F.mse_loss",
        "transformers.act.gelu_new",
        "transformers.LlamaRMSNorm",
        "transformers.GemmaRMSNorm",
        "blocks.llama_mlp",
        "blocks.gqa_rotary_attention",
        "blocks.llama_rotary",
        "blocks.dense_moe",
    ):
        assert expected in names, expected
    classes = Counter(s.op_class for s in crawled)
    assert set(classes) <= set(CLASSES)
    for cls in (
        "activation",
        "reduction",
        "normalization",
        "convolution",
        "linear",
        "pooling",
        "attention",
        "mlp",
        "rotary",
        "softmax",
        "loss",
    ):
        assert classes[cls] >= 1, cls


def test_each_seed_says_how_to_build_it_and_for_which_shapes_and_dtypes(crawled):
    by_name = {s.name: s for s in crawled}
    conv = by_name["nn.Conv2d"].describe()
    assert conv["class"] == "convolution" and conv["inputs"] == {"image": [2, 4, 6, 6]}
    assert "nn.Conv2d(in_channels=$C, out_channels=$NC, kernel_size=3)" in conv["build"]
    assert by_name["torch.log"].domain == "positive" and by_name["torch.logit"].domain == "prob"
    assert by_name["torch.sigmoid"].out_range == "prob"
    assert "bfloat16" in by_name["torch.tanh"].dtypes
    attention = by_name["blocks.gqa_rotary_attention"]
    assert attention.layouts == ("sequence",) and "class LlamaAttention" in attention.helper
    # transformers' own code is inlined: a task file imports nothing but torch.
    assert "import transformers" not in by_name["transformers.LlamaRMSNorm"].helper
    for seed in crawled:
        assert seed.layouts and seed.dtypes[0] == "float32" and seed.forward.startswith("x = ")
        assert Seed.from_json(json.loads(json.dumps(seed.to_json()))) == seed


def test_stochastic_operators_are_marked_and_losses_end_a_chain(crawled):
    by_name = {s.name: s for s in crawled}
    assert by_name["nn.Dropout"].stochastic and by_name["nn.RReLU"].stochastic
    assert not by_name["F.gelu"].stochastic
    assert by_name["F.mse_loss"].terminal and by_name["F.mse_loss"].op_class == "loss"


def test_list_seeds_prints_the_catalogue(crawled):
    out = subprocess.run(
        [sys.executable, "-m", "training", "synthesize", "--list-seeds"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == len(crawled) and {"name", "class", "build", "inputs", "dtypes"} <= set(rows[0])
