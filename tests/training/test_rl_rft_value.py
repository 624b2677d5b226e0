"""RFT keeps only trajectories over the threshold and trains on policy tokens only; rendered trajectories mask
exactly the answers; value pre-training lowers the value loss on a fixed set."""

import json

import pytest
import torch

from agent.loop import SYSTEM
from agent.tools import SCHEMAS
from agent.trajectory import ToolCall, Trajectory, Turn
from training.rl import rft, tokens, value
from training.rl.config import RFTConfig, ValueConfig
from training.rl.models import ValueModel, train_tokenizer
from training.rl.tokens import Batch, Sample


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer([SYSTEM, json.dumps(SCHEMAS), "verify compile submit read_file problem.py"] * 2, 400)


def trajectory(reward, turns=2):
    calls = [
        [ToolCall("read_file", {"path": "problem.py"}, observation="import torch")],
        [ToolCall("verify", {}, observation="verify: ok")],
    ]
    return Trajectory(
        problem="p.py",
        device="cpu",
        policy="heuristic",
        tools=SCHEMAS,
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Optimize p.py"}],
        turns=[Turn(index=i + 1, thought=f"step {i}", tool_calls=calls[i % 2]) for i in range(turns)],
        verdict={"reward": reward, "correct": reward >= 1, "status": "ok" if reward >= 1 else "incorrect"},
    )


def test_rft_keeps_only_trajectories_over_the_threshold():
    # The paper's reward: -1 failed, 1 correct, 2 more than 5% faster than eager, 3 than both.
    episodes = [trajectory(-1), trajectory(1), trajectory(3), trajectory(2)]
    assert [t.verdict["reward"] for t in rft.keep(episodes, threshold=2)] == [3, 2]
    assert rft.keep([trajectory(-1)], threshold=0) == []


def test_rfts_default_threshold_keeps_every_correct_trajectory_and_no_failure():
    episodes = [trajectory(-1), trajectory(1), trajectory(3), trajectory(2)]
    assert [t.verdict["reward"] for t in rft.keep(episodes, RFTConfig().threshold)] == [1, 3, 2]


def test_rendered_trajectories_mask_exactly_the_answers(tokenizer):
    (sample,) = tokens.samples(trajectory(2), tokenizer)
    answers = []
    current = []
    for token, m in zip(sample.token_ids, sample.mask):
        if m:
            current.append(token)
        elif current:
            answers.append(tokenizer.decode(current))
            current = []
    if current:
        answers.append(tokenizer.decode(current))
    assert answers == [
        'step 0\n<tool_call>\n{"name": "read_file", "arguments": {"path": "problem.py"}}\n</tool_call><|im_end|>',
        'step 1\n<tool_call>\n{"name": "verify", "arguments": {}}\n</tool_call><|im_end|>',
    ]
    # the prompt and the tool result are environment tokens; the reward sits on the last answer token
    assert "import torch" in tokenizer.decode([t for t, m in zip(sample.token_ids, sample.mask) if not m])
    last = max(i for i, m in enumerate(sample.mask) if m)
    assert sample.rewards[last] == 2 and sum(sample.rewards) == 2


def test_the_sft_loss_ignores_environment_tokens(tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
        )
    )
    (sample,) = tokens.samples(trajectory(2), tokenizer)
    batch = Batch.collate([sample])
    loss = rft.sft_loss(model, batch)
    positions = torch.tensor(sample.mask, dtype=torch.bool)
    logits = model(input_ids=batch.token_ids).logits
    manual = (
        -torch.log_softmax(logits[0, :-1], -1)
        .gather(-1, batch.token_ids[0, 1:, None])
        .squeeze(-1)[positions[1:]]
        .mean()
    )
    assert loss.item() == pytest.approx(manual.item(), rel=1e-5)


def test_value_pretraining_lowers_the_value_loss_on_a_fixed_set():
    from accelerate import Accelerator
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(0)
    critic = ValueModel(
        LlamaModel(
            LlamaConfig(
                vocab_size=8,
                hidden_size=16,
                intermediate_size=32,
                num_hidden_layers=1,
                num_attention_heads=2,
                num_key_value_heads=2,
            )
        )
    )
    # the episode's return is decided by its first token (the "task"): 1 -> +1, 2 -> -1, 3 -> 0
    returns = {1: 1.0, 2: -1.0, 3: 0.0}
    samples = [
        Sample([task, 5, 6, 7, 6], [0, 0, 1, 0, 1], [0.0] * 5, [0, 0, 0, 0, returns[task]]) for task in (1, 2, 3) * 4
    ]
    batch = Batch.collate(samples)
    before_loss, before_ev = value.measure(critic, batch, gamma=1.0, lam=1.0)
    optimizer = torch.optim.AdamW(critic.parameters(), lr=1e-2)
    cfg = ValueConfig(batch_size=4, lam=1.0)
    for epoch in range(15):
        value.fit_epoch(
            critic,
            samples,
            optimizer,
            Accelerator(cpu=True),
            Batch.collate,
            cfg,
            1.0,
            torch.randperm(len(samples), generator=torch.Generator().manual_seed(epoch)).tolist(),
        )
    after_loss, after_ev = value.measure(critic, batch, gamma=1.0, lam=1.0)
    assert after_loss < 0.2 * before_loss
    assert before_ev < 0.1 < 0.8 < after_ev
