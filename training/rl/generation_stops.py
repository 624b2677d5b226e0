"""What ends or guards a batched generation early: rows that only pad a batch, rows caught in a loop (greedy
decoding of a small actor repeats one block until its token budget is spent), and a static KV cache that is handed
keys of another dtype than it was allocated in (bf16 autocast, where eager and compiled steps disagree)."""

import torch

LOOP_WINDOW = 512  # a row whose last this-many tokens repeat one block is finished (0: never)
LOOP_PERIOD = 64  # the longest block a loop may repeat
LOOP_EVERY = 64  # check every this-many new tokens


class FinishedRows:
    """A stopping criterion that finishes the rows of MASK at once (the rows that only pad a batch to its bucket)."""

    def __init__(self, mask):
        self.mask = mask

    def __call__(self, input_ids, scores, **kwargs):
        return self.mask


class LoopingRows:
    """A stopping criterion that finishes a row once its last WINDOW new tokens are one block of at most PERIOD
    tokens repeated: such a row would otherwise decode to max_new_tokens (minutes of a greedy evaluation) and its
    answer is cut off either way. `stopped_at[row]` is the sequence length at which the row was finished."""

    def __init__(self, rows, width, window=LOOP_WINDOW, period=LOOP_PERIOD, every=LOOP_EVERY):
        self.width, self.window, self.period, self.every = width, window, period, every
        self.stopped_at = [None] * rows

    def __call__(self, input_ids, scores, **kwargs):
        length = input_ids.shape[1]
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        new = length - self.width
        if not self.window or new < self.window + self.period or new % self.every:
            return done
        tail = input_ids[:, -self.window :]
        for shift in range(1, self.period + 1):
            done |= (tail == input_ids[:, length - self.window - shift : length - shift]).all(dim=1)
        for row in done.nonzero().flatten().tolist():
            if self.stopped_at[row] is None:
                self.stopped_at[row] = length
        return done

    def new_tokens(self, row):
        """How many new tokens ROW kept before it was finished as a loop, or None."""
        stopped = self.stopped_at[row]
        return None if stopped is None else stopped - self.width


def cast_on_update(cache):
    """Make each layer of the static CACHE cast the keys and values it is handed to the dtype it holds. Under bf16
    autocast a Llama/Qwen2 layer hands float32 keys (rotary embeddings in float32) beside bfloat16 values, and a
    compiled step may hand bfloat16 keys to a float32 cache; `index_copy_` refuses both. transformers 5.17 (the GPU
    host's) allocates a layer's values in its keys' dtype, so the first update's values are cast to the keys' dtype
    too. Returns CACHE."""
    for layer in cache.layers:
        layer.update = _casting(layer, layer.update)
    return cache


def _casting(layer, update):
    def cast_update(key_states, value_states, *args, **kwargs):
        if getattr(layer, "is_initialized", False):
            key_states, value_states = key_states.to(layer.keys.dtype), value_states.to(layer.values.dtype)
        else:
            value_states = value_states.to(key_states.dtype)
        return update(key_states, value_states, *args, **kwargs)

    return cast_update
