"""Batched generation (training/rl/generation.py) answers as one-at-a-time generation does: at temperature 0 the
same tokens and log-probs for prompts of different lengths, on tiny randomly initialised Qwen2 and Llama models
saved and loaded like any checkpoint; episodes asking from their own threads share batches."""

import threading

import pytest
import torch

from agent.policies.transformers_policy import TransformersPolicy
from training.rl.generation import BatchedGenerator
from training.rl.models import train_tokenizer

TEXTS = [
    "__global__ void add(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; }",
    "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n",
    "verify compile submit read_file write_file problem.py kernels/add.cu binding.cpp",
] * 3
PROMPTS = [
    "def forward(self, x):",
    "__global__ void relu(float* x)",
    "import torch",
    "verify the kernel, then submit",
    "x",
]


@pytest.fixture(scope="module", params=["qwen2", "llama"])
def checkpoint(request, tmp_path_factory):
    from transformers import AutoConfig, AutoModelForCausalLM

    tokenizer = train_tokenizer(TEXTS, 300)
    config = AutoConfig.for_model(
        request.param,
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp(request.param)
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def prompt_ids(policy):
    return [policy.tokenizer(text, add_special_tokens=False)["input_ids"] for text in PROMPTS]


@pytest.mark.parametrize("decode", ["dynamic", "static"])
@pytest.mark.parametrize("attention", ["sdpa", "matmul"])
def test_batched_generation_gives_the_tokens_of_one_at_a_time_generation_at_temperature_0(
    checkpoint, decode, attention
):
    # static: a preallocated cache (compiled on CUDA), 5 rows padded to 8 with rows that finish at once;
    # matmul: each new token's attention as two matrix products over the padded cache (decode_attention.py)
    policy = TransformersPolicy(checkpoint, device="cpu", dtype="float32", temperature=0.0, max_new_tokens=16)
    prompts = prompt_ids(policy)
    assert len({len(p) for p in prompts}) > 2  # rows of several lengths: left padding is exercised
    alone = [policy.decode(ids, 16, 0.0) for ids in prompts]
    assert max(len(g.response_token_ids) for g in alone) > 4
    generator = BatchedGenerator(policy.lm, policy.tokenizer, "cpu", max_batch=8, decode=decode, attention=attention)
    try:
        together = generator.generate_all([(ids, 16) for ids in prompts], 0.0)
    finally:
        generator.close()
    assert policy.lm.config._attn_implementation == "sdpa"  # the model's own again for training
    assert generator.stats["batches"] == 1 and generator.stats["rows"] == len(prompts)
    for one, batched in zip(alone, together):
        assert batched.response_token_ids == one.response_token_ids
        assert batched.prompt_token_ids == one.prompt_token_ids
        assert (batched.text, batched.finish_reason) == (one.text, one.finish_reason)
        assert batched.response_logprobs == pytest.approx(one.response_logprobs, abs=1e-4)


@pytest.mark.parametrize("decode", ["dynamic", "static"])
def test_sampled_answers_record_the_log_probs_of_the_raw_logits_step_by_step(checkpoint, decode):
    policy = TransformersPolicy(checkpoint, device="cpu", dtype="float32", temperature=0.7, max_new_tokens=12)
    prompts = prompt_ids(policy)
    generator = BatchedGenerator(policy.lm, policy.tokenizer, "cpu", max_batch=8, decode=decode)
    try:
        torch.manual_seed(1)
        together = generator.generate_all([(ids, 12) for ids in prompts], 0.7)
    finally:
        generator.close()
    for answer in together:  # a teacher-forced pass over prompt + answer gives the same log-probs
        ids = torch.tensor([answer.prompt_token_ids + answer.response_token_ids])
        with torch.no_grad():
            logits = policy.lm(ids).logits[0, len(answer.prompt_token_ids) - 1 : -1].float()
        expected = torch.log_softmax(logits, -1).gather(-1, ids[0, len(answer.prompt_token_ids) :, None]).squeeze(-1)
        assert len(answer.response_logprobs) == len(answer.response_token_ids) > 0
        assert answer.response_logprobs == pytest.approx(expected.tolist(), abs=1e-4)


def test_episodes_asking_from_their_threads_share_batches_and_get_their_own_answers(checkpoint):
    policy = TransformersPolicy(checkpoint, device="cpu", dtype="float32", temperature=0.0, max_new_tokens=12)
    prompts = prompt_ids(policy)
    alone = [policy.decode(ids, 12, 0.0).response_token_ids for ids in prompts]
    generator = BatchedGenerator(policy.lm, policy.tokenizer, "cpu", max_batch=8, wait_s=5.0)
    answers = [None] * len(prompts)

    def episode(i):
        try:
            for _ in range(2):  # two turns: each waits for the others, who are all live
                answers[i] = generator.generate(prompts[i], 12, 0.0).response_token_ids
        finally:
            generator.leave()

    for _ in prompts:
        generator.join()
    threads = [threading.Thread(target=episode, args=(i,)) for i in range(len(prompts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    generator.close()
    assert answers == alone
    # every episode was live and asking, so each turn was one batch of all of them
    assert generator.stats["rows"] == 2 * len(prompts) and generator.stats["batches"] == 2


def test_a_batch_respects_the_token_budget_and_the_row_limit(checkpoint):
    policy = TransformersPolicy(checkpoint, device="cpu", dtype="float32", temperature=0.0, max_new_tokens=8)
    prompts = prompt_ids(policy)
    generator = BatchedGenerator(policy.lm, policy.tokenizer, "cpu", max_batch=2)
    try:
        out = generator.generate_all([(ids, 8) for ids in prompts], 0.0)
    finally:
        generator.close()
    assert [g.prompt_token_ids for g in out] == prompts
    assert generator.stats["batches"] == 3 and all(len(g.response_token_ids) <= 8 for g in out)


def test_static_batches_pad_rows_to_a_power_of_two_and_caches_to_a_multiple_of_the_cache_step():
    from training.rl.generation import CACHE_STEP, bucket_rows, cache_length

    assert [bucket_rows(n, 24) for n in (1, 2, 3, 5, 9, 17, 24)] == [1, 2, 4, 8, 16, 24, 24]
    assert bucket_rows(40, 32) == 40  # a batch over the row limit is never cut
    assert cache_length(1) == cache_length(CACHE_STEP) == CACHE_STEP and cache_length(CACHE_STEP + 1) == 2 * CACHE_STEP
    assert cache_length(300, limit=256) == 300 and cache_length(200, limit=256) == 256
    with pytest.raises(ValueError, match="decode must be one of"):
        BatchedGenerator(None, None, "cpu", decode="paged")
    with pytest.raises(ValueError, match="attention must be one of"):
        BatchedGenerator(None, None, "cpu", attention="flash")


@pytest.mark.parametrize("decode", ["dynamic", "static"])
def test_a_row_caught_in_a_loop_is_finished_once_its_tail_repeats(checkpoint, decode):
    # a zeroed output layer makes every logit equal: greedy decoding repeats token 0 (not end-of-text) forever
    policy = TransformersPolicy(checkpoint, device="cpu", dtype="float32", temperature=0.0, max_new_tokens=200)
    with torch.no_grad():
        policy.lm.get_output_embeddings().weight.zero_()
    prompts = [(ids, 200) for ids in prompt_ids(policy)[:2]]
    answers = {}
    for window in (32, 0):
        generator = BatchedGenerator(policy.lm, policy.tokenizer, "cpu", decode=decode, loop_window=window)
        try:
            answers[window] = generator.generate_all(prompts, 0.0)
        finally:
            generator.close()
        assert generator.stats["looping_rows"] == (2 if window else 0)
    for looped, full in zip(answers[32], answers[0]):
        # found at the first check past window + period (128 new tokens), not run to the 200-token budget
        assert len(looped.response_token_ids) == 128 and len(full.response_token_ids) == 200
        assert looped.finish_reason == full.finish_reason == "length"
        assert full.response_token_ids[:128] == looped.response_token_ids
        assert looped.response_logprobs == pytest.approx(full.response_logprobs[:128])


def test_a_static_batch_padded_to_its_bucket_checks_its_padding_rows_for_loops_too(checkpoint):
    # three prompts pad to a bucket of four; the padding row decodes pad tokens, a tail that repeats like a loop's,
    # and the loop check once indexed it past the requests (IndexError: the whole batch failed)
    policy = TransformersPolicy(checkpoint, device="cpu", dtype="float32", temperature=0.0, max_new_tokens=200)
    with torch.no_grad():
        policy.lm.get_output_embeddings().weight.zero_()
    prompts = [(ids, 200) for ids in prompt_ids(policy)[:3]]
    generator = BatchedGenerator(policy.lm, policy.tokenizer, "cpu", decode="static", loop_window=32)
    try:
        answers = generator.generate_all(prompts, 0.0)
    finally:
        generator.close()
    assert [len(a.response_token_ids) for a in answers] == [128] * 3
    assert generator.stats["looping_rows"] == 3 and generator.stats["batches"] == 1


def test_only_a_tail_that_repeats_a_short_block_counts_as_a_loop():
    from training.rl.generation_stops import LoopingRows

    width, new = 3, 128
    torch.manual_seed(0)
    rows = torch.randint(10, 1000, (4, width + new))
    rows[1, width:] = torch.arange(5).repeat(new // 5 + 1)[:new] + 10  # a block of 5 repeated
    rows[2, width:] = torch.arange(70).repeat(2)[:new] + 10  # a block of 70: longer than a loop's longest
    rows[3, width + 60 :] = 7  # one token repeated over the last 68 new tokens
    stop = LoopingRows(4, width, window=32, period=64, every=64)
    assert stop(rows, None).tolist() == [False, True, False, True]
    assert [stop.new_tokens(row) for row in range(4)] == [None, new, None, new]
    assert not stop(rows[:, :-1], None).any()  # 127 new tokens: not a multiple of `every`, not checked
    assert not LoopingRows(4, width, window=0)(rows, None).any()


def test_a_static_cache_takes_keys_of_another_dtype_than_it_holds():
    from transformers import AutoConfig, StaticCache

    from training.rl.generation_stops import cast_on_update

    config = AutoConfig.for_model(
        "llama", hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2
    )
    keys = torch.randn(1, 2, 3, 8, dtype=torch.bfloat16)
    cache = StaticCache(config=config, max_cache_len=16)
    cache.early_initialization(1, 2, 8, torch.float32, torch.device("cpu"))
    with pytest.raises(RuntimeError, match="dtype"):  # what a compiled bf16 step met on the H200
        cache.update(keys, keys, 0, {"cache_position": torch.arange(3)})
    cache = cast_on_update(StaticCache(config=config, max_cache_len=16))
    cache.early_initialization(1, 2, 8, torch.float32, torch.device("cpu"))
    stored, _ = cache.update(keys, keys, 0, {"cache_position": torch.arange(3)})
    assert stored.dtype == torch.float32 and torch.equal(stored[:, :, :3], keys.float())


class _OneDtypeLayer:
    """A static cache layer as transformers 5.17 writes it: allocated at the first update in the keys' dtype, values
    included, then filled by `index_copy_`."""

    is_initialized = False

    def update(self, key_states, value_states, *args, **kwargs):
        if not self.is_initialized:
            shape = (*key_states.shape[:2], 16, key_states.shape[-1])
            self.keys = torch.zeros(shape, dtype=key_states.dtype)
            self.values = torch.zeros(shape, dtype=key_states.dtype)
            self.is_initialized = True
        position = torch.arange(key_states.shape[2])
        self.keys.index_copy_(2, position, key_states)
        self.values.index_copy_(2, position, value_states)
        return self.keys, self.values


def test_a_static_cache_takes_float32_keys_beside_bfloat16_values_at_its_first_update():
    """Under bf16 autocast a rotary layer's keys are float32 and its values bfloat16 (the H200 run of 2026-11-29)."""
    from types import SimpleNamespace

    from training.rl.generation_stops import cast_on_update

    keys, values = torch.randn(1, 2, 3, 8), torch.randn(1, 2, 3, 8, dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match="dtype"):
        _OneDtypeLayer().update(keys, values)
    cache = cast_on_update(SimpleNamespace(layers=[_OneDtypeLayer()]))
    stored_keys, stored_values = cache.layers[0].update(keys, values)
    assert stored_keys.dtype == stored_values.dtype == torch.float32
    assert torch.equal(stored_values[:, :, :3], values.float()) and torch.equal(stored_keys[:, :, :3], keys)
    stored_keys, _ = cache.layers[0].update(keys.bfloat16(), values)  # a later compiled step's bfloat16 keys
    assert stored_keys.dtype == torch.float32


def test_matmul_decode_attention_under_bf16_autocast_scores_as_precisely_as_sdpa():
    """A sharp head (scores up to ~100) reading a float32 static cache under bf16 autocast, one row left-padded: the
    matmul path scores in float32 as SDPA's kernels do (training's and the prompt's attention), so its output is the
    exact attention's. Scores rounded to bf16 before the softmax put it 0.14 off, further than SDPA's 0.12."""
    from types import SimpleNamespace

    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from training.rl.decode_attention import decode_attention_forward

    g = torch.Generator().manual_seed(0)
    query = 6 * torch.randn(2, 4, 1, 64, generator=g)
    key = 6 * torch.randn(2, 4, 512, 64, generator=g)
    value = torch.randn(2, 4, 512, 64, generator=g)
    mask = torch.ones(2, 1, 1, 512, dtype=torch.bool)
    mask[1, ..., :100] = False
    module = SimpleNamespace(training=False, num_key_value_groups=1)
    exact = sdpa_attention_forward(module, query.double(), key.double(), value.double(), mask)[0]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        sdpa = sdpa_attention_forward(module, query, key, value, mask)[0]
        matmul = decode_attention_forward(module, query, key, value, mask)[0]
    assert matmul.shape == sdpa.shape == exact.shape
    error = (matmul.double() - exact).abs().max().item()
    assert error < 1e-4 and error <= (sdpa.double() - exact).abs().max().item()
