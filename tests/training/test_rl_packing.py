"""Packed fine-tuning rows (tokens.pack) give every sample the log-probs it has alone, so RFT's loss is the same
packed or not; the learning-rate schedule warms up, then holds or decays along a cosine to its floor."""

import itertools

import pytest
import torch

from training.rl import rft
from training.rl.models import ValueModel
from training.rl.ppo import token_logprobs, token_values
from training.rl.schedule import lr_at
from training.rl.tokens import Batch, Sample, pack


def tiny(arch):
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    config = AutoConfig.for_model(
        arch,
        vocab_size=50,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=0,
        bos_token_id=None,
        eos_token_id=1,
    )
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config).eval(), ValueModel(AutoModel.from_config(config)).eval()


def samples():
    g = torch.Generator().manual_seed(0)
    out = []
    for length in (23, 9, 31, 14, 6):
        ids = torch.randint(2, 50, (length,), generator=g).tolist()
        mask = [0] * 4 + [int(x) for x in torch.randint(0, 2, (length - 4,), generator=g)]
        out.append(Sample(ids, mask, [0.0] * length, [0.0] * (length - 1) + [1.0]))
    return out


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_a_packed_row_gives_each_sample_its_own_log_probs_and_values(arch):
    actor, critic = tiny(arch)
    items = samples()
    rows = pack(items, width=40)
    assert len(rows) < len(items) and all(len(r.token_ids) <= 40 for r in rows)
    assert sum(r.meta["packed"] for r in rows) == len(items)
    with torch.no_grad():
        alone = [token_logprobs(actor, Batch.collate([s]))[0][0] for s in items]
        alone_values = [token_values(critic, Batch.collate([s]))[0] for s in items]
        packed, _ = token_logprobs(actor, Batch.collate(rows))
        packed_values = token_values(critic, Batch.collate(rows))
    # find each sample in its row by its tokens, and compare every position but its first (nothing before it)
    for sample, mine, values in zip(items, alone, alone_values):
        found = 0
        for r, row in enumerate(rows):
            for start in (i for i, p in enumerate(row.positions) if p == 0):
                if row.token_ids[start : start + len(sample.token_ids)] == sample.token_ids:
                    span = slice(start + 1, start + len(sample.token_ids))
                    assert torch.allclose(packed[r, span], mine[1:], atol=1e-5)
                    assert torch.allclose(packed_values[r, span], values[1:], atol=1e-5)
                    found += 1
        assert found == 1


def test_the_sft_loss_is_the_same_packed_or_not():
    actor, _ = tiny("qwen2")
    items = samples()
    with torch.no_grad():
        plain = rft.sft_loss(actor, Batch.collate(items))
        packed = rft.sft_loss(actor, Batch.collate(pack(items, width=64)))
    assert packed.item() == pytest.approx(plain.item(), rel=1e-5)


def test_the_learning_rate_warms_up_then_decays_along_a_cosine_to_its_floor():
    curve = [lr_at(step, 100, 1e-3, "cosine", warmup=0.1, floor=0.1) for step in range(100)]
    assert curve[0] == pytest.approx(1e-4) and curve[9] == pytest.approx(1e-3)
    assert all(a > b for a, b in itertools.pairwise(curve[10:]))
    assert curve[-1] == pytest.approx(1e-4)
    assert [lr_at(s, 100, 1e-3) for s in (0, 50, 99)] == [1e-3] * 3
