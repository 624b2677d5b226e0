"""Batched generation for rollouts: the episodes of a step, each in its own thread, ask one generator for their
next answer; it runs the waiting requests together (left padding, one `generate` call per batch) while the
other episodes build, verify and time in the sandbox.

Why batching: a small model's decoding is bound by the per-token launch overhead, not by arithmetic, so one
sequence costs about what thirty-two do (on the H100 before this: 21.6 s of rollout against 1.2 s of update
per PPO step, one sequence at a time behind a lock). With `max_batch=1` the generator is that old path.

A batch starts as soon as every live episode waits for an answer, or `wait_s` after its first request arrived
(episodes still in a tool call then join the next batch). Rows are grouped by length so that a batch's padded
size stays under `max_batch_tokens`. At temperature 0 a batched answer is token for token the one-at-a-time answer
(left padding with an attention mask: positions count real tokens only).

Why a static cache (`decode="static"`): even batched, a ~36M model decodes at 10-15 ms a token on the H100, all of it
Python and kernel launches, so a 6k-token answer takes over a minute whatever the batch. With a preallocated KV cache
transformers compiles the decode step (`torch.compile`, mode reduce-overhead: one CUDA graph replay per token). Its
shapes are kept to a few: rows are padded to a power of two (the extra rows finish at once) and the cache's length
is rounded up to `CACHE_STEP` tokens, so a rollout compiles a handful of times, not once per batch. On the CPU the
same static cache runs without compilation (what the CPU tests pin down: the same tokens as the dynamic cache).
"""

import logging
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass

import torch

from agent.policies.transformers_policy import Generation
from training.rl.generation_stops import LOOP_WINDOW, FinishedRows, LoopingRows, cast_on_update

log = logging.getLogger(__name__)


@dataclass
class Request:
    prompt_ids: list
    max_new_tokens: int
    temperature: float
    future: Future


class ChosenLogprobs:
    """A logits processor that records the log-probability of each generated token under the step's raw logits,
    one step at a time: keeping every step's logits (`output_logits`) holds rows x steps x vocabulary floats, ~10 GB
    for 24 rows of 6k tokens over a 16k vocabulary. It sees the logits before any sampling warper (transformers
    merges custom processors ahead of temperature and top-k) and changes nothing."""

    def __init__(self, width):
        self.width, self.previous, self.steps = width, None, []

    def __call__(self, input_ids, scores):
        if self.previous is not None:  # the token the last step chose is the newest input
            self.steps.append(self.previous.gather(-1, input_ids[:, -1:]).squeeze(-1))
        self.previous = torch.log_softmax(scores.float(), -1)
        return scores

    def finish(self, sequences):
        """(rows, generated tokens) log-probs of SEQUENCES' new tokens."""
        if self.previous is not None and sequences.shape[1] > self.width + len(self.steps):
            chosen = sequences[:, self.width + len(self.steps)]
            self.steps.append(self.previous.gather(-1, chosen[:, None]).squeeze(-1))
        self.previous = None
        if not self.steps:
            return torch.zeros(sequences.shape[0], 0, device=sequences.device)
        return torch.stack(self.steps, 1)


CACHE_STEP = 2048  # a static cache's length is a multiple of this (its shape, and so the compiled graph, is reused)
DECODES = ("dynamic", "static")
ATTENTIONS = ("sdpa", "matmul")  # matmul: SDPA for prompts, matrix products per new token (decode_attention.py)


def bucket_rows(rows, max_batch):
    """The padded row count of a batch of ROWS: the next power of two, at most MAX_BATCH (a compiled shape each)."""
    size = 1
    while size < rows:
        size *= 2
    return max(rows, min(size, max_batch))


def cache_length(needed, limit=None):
    """A static cache's length for NEEDED tokens: rounded up to CACHE_STEP, but never past the model's LIMIT."""
    length = -(-needed // CACHE_STEP) * CACHE_STEP
    return max(needed, min(length, limit)) if limit else length


def cache_argument(lm):
    """The name LM's forward takes its cache by: `cache` since transformers 5.2x, `past_key_values` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(type(lm).forward).parameters else "past_key_values"


class GenerationError(RuntimeError):
    """A batch of generation failed; the message names the batch's shape and the cause."""


class BatchedGenerator:
    """Serves `generate(prompt_ids, max_new_tokens, temperature)` from many threads with batched `lm.generate`."""

    def __init__(
        self,
        lm,
        tokenizer,
        device,
        max_batch=32,
        max_batch_tokens=262144,
        wait_s=0.2,
        decode="dynamic",
        attention="sdpa",
        loop_window=LOOP_WINDOW,
    ):
        if decode not in DECODES:
            raise ValueError(f"decode must be one of {', '.join(DECODES)}, not {decode!r}")
        if attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {', '.join(ATTENTIONS)}, not {attention!r}")
        self.lm, self.tokenizer, self.device, self.decode = lm, tokenizer, device, decode
        self.attention, self.loop_window = attention, loop_window
        self.max_batch, self.max_batch_tokens, self.wait_s = max(1, max_batch), max_batch_tokens, wait_s
        self.pending, self.live = [], 0
        self.cond = threading.Condition()
        self.closed = False
        self.stats = {"batches": 0, "rows": 0, "generate_s": 0.0, "new_tokens": 0, "looping_rows": 0}
        self.thread = threading.Thread(target=self._serve, name="batched-generator", daemon=True)
        self.thread.start()

    # -- the episodes' side -------------------------------------------------------------------------------------
    def join(self):
        """An episode starts: the generator waits for its request before starting a batch early."""
        with self.cond:
            self.live += 1

    def leave(self):
        with self.cond:
            self.live = max(0, self.live - 1)
            self.cond.notify_all()

    def generate(self, prompt_ids, max_new_tokens, temperature):
        """The Generation of PROMPT_IDS (blocks until its batch ran)."""
        request = Request(list(prompt_ids), max_new_tokens, temperature, Future())
        with self.cond:
            if self.closed:
                raise GenerationError("the generator was closed: the rollouts of this step are over")
            self.pending.append(request)
            self.cond.notify_all()
        return request.future.result()

    def generate_all(self, prompts, temperature):
        """Generations of PROMPTS ([(prompt ids, max new tokens)]), queued at once so that they share batches."""
        requests = [Request(list(ids), budget, temperature, Future()) for ids, budget in prompts]
        with self.cond:
            self.pending.extend(requests)
            self.cond.notify_all()
        return [r.future.result() for r in requests]

    def close(self):
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        self.thread.join()

    # -- the generator's side -----------------------------------------------------------------------------------
    def _serve(self):
        while True:
            with self.cond:
                while not self.pending and not self.closed:
                    self.cond.wait()
                if not self.pending and self.closed:
                    return
                first = time.monotonic()
                # wait for the episodes still in a tool call, a little: they join the next batch otherwise
                while not self.closed and len(self.pending) < min(self.max_batch, max(self.live, 1)):
                    left = first + self.wait_s - time.monotonic()
                    if left <= 0:
                        break
                    self.cond.wait(left)
                taken = self._take()
            try:
                results = self.generate_many(taken)
            except Exception as exc:  # noqa: BLE001 -- every waiting episode must hear of it, not hang
                error = GenerationError(
                    f"a batch of {len(taken)} prompts ({max(len(r.prompt_ids) for r in taken)} "
                    f"tokens at most) failed: {type(exc).__name__}: {exc}"
                )
                for request in taken:
                    request.future.set_exception(error)
                continue
            for request, result in zip(taken, results):
                request.future.set_result(result)

    def _take(self):
        """The next batch: requests of one temperature, longest first, as many as fit the token budget."""
        temperature = self.pending[0].temperature
        same = sorted((r for r in self.pending if r.temperature == temperature), key=lambda r: -len(r.prompt_ids))
        taken = []
        for request in same:
            rows = len(taken) + 1
            width = max(len(same[0].prompt_ids), 1) + max(r.max_new_tokens for r in taken + [request])
            if taken and (rows > self.max_batch or rows * width > self.max_batch_tokens):
                break
            taken.append(request)
        self.pending = [r for r in self.pending if all(r is not t for t in taken)]
        return taken

    def generate_many(self, requests):
        """Generations of REQUESTS (one temperature) in one batched `generate` call, left-padded."""
        t0 = time.monotonic()
        eos = self.lm.generation_config.eos_token_id or self.tokenizer.eos_token_id
        eos = list(eos) if isinstance(eos, (list, tuple)) else [eos]
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos[0]
        width = max(len(r.prompt_ids) for r in requests)
        prompts = [r.prompt_ids for r in requests]
        max_new = max(r.max_new_tokens for r in requests)
        from transformers import StoppingCriteriaList

        extra = {}
        if self.decode == "static":
            # pad the batch to its bucket with one-token rows that a stopping criterion finishes at once
            prompts = prompts + [[pad]] * (bucket_rows(len(requests), self.max_batch) - len(requests))
            from transformers import StaticCache

            limit = getattr(self.lm.config, "max_position_embeddings", None)
            cache = cast_on_update(
                StaticCache(config=self.lm.config, max_cache_len=cache_length(width + max_new, limit))
            )
            extra[cache_argument(self.lm)] = cache
            padding = torch.tensor([row >= len(requests) for row in range(len(prompts))], device=self.device)
            extra["stopping_criteria"] = [FinishedRows(padding)]
        # over every row of the batch: a padding row's run of pad tokens looks like a loop too
        looping = LoopingRows(len(prompts), width, window=self.loop_window)
        extra["stopping_criteria"] = StoppingCriteriaList([looping, *extra.get("stopping_criteria", [])])
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=self.device)
        attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=self.device)
        temperature = requests[0].temperature
        sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
        from transformers import LogitsProcessorList

        recorder = ChosenLogprobs(width)
        training = self.lm.training
        self.lm.eval()
        previous = self.lm.config._attn_implementation
        if self.attention == "matmul":
            from training.rl.decode_attention import register

            self.lm.set_attn_implementation(register())
        try:
            with torch.no_grad():
                out = self.lm.generate(
                    ids,
                    attention_mask=attention,
                    max_new_tokens=max_new,
                    return_dict_in_generate=True,
                    logits_processor=LogitsProcessorList([recorder]),
                    eos_token_id=eos,
                    pad_token_id=pad,
                    **sampling,
                    **extra,
                )
        finally:
            self.lm.train(training)
            if self.lm.config._attn_implementation != previous:
                self.lm.set_attn_implementation(previous)
        tokens = out.sequences[:, width:]
        # the log-probability of each generated token under the raw logits (as the one-at-a-time policy records)
        logprobs = recorder.finish(out.sequences)
        results = []
        for row, request in enumerate(requests):
            looped = looping.new_tokens(row)
            response = tokens[row, : min(request.max_new_tokens, looped or request.max_new_tokens)].tolist()
            end = next((i + 1 for i, token in enumerate(response) if token in eos), None)
            finished = end is not None
            self.stats["looping_rows"] += looped is not None and not finished
            response = response[:end] if finished else response
            body = response[:-1] if finished else response
            results.append(
                Generation(
                    self.tokenizer.decode(body, skip_special_tokens=False),
                    request.prompt_ids,
                    response,
                    logprobs[row, : len(response)].tolist(),
                    "stop" if finished else "length",
                )
            )
        self.stats["batches"] += 1
        self.stats["rows"] += len(requests)
        self.stats["generate_s"] += time.monotonic() - t0
        self.stats["new_tokens"] += sum(len(g.response_token_ids) for g in results)
        log.debug("generated %d rows (prompt width %d) in %.2f s", len(requests), width, time.monotonic() - t0)
        return results
