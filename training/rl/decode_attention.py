"""The attention the actor decodes with: PyTorch's SDPA for the prompt, two batched matrix products for each new token.

Why: with a padding mask (a batch of left-padded prompts) SDPA takes its memory-efficient kernel, which walks a
row's whole cache in one thread block per head. For one query token that leaves the GPU mostly idle: on the H200,
24 rows of a ~4.5k-token context, the 36M actor decoded at ~10 ms a token whatever the Python overhead (a compiled
CUDA-graph step was no faster than eager `generate`). A query of one token is a matrix-vector product per head,
which cuBLAS spreads over the whole GPU. The prompt (queries of many tokens) keeps SDPA: a dense score matrix of a
16k-token prompt would not fit.

Registered with transformers' attention interface as `DECODE_ATTENTION` (its masks are SDPA's: boolean, True where
a key may be read), so a model takes it with `lm.set_attn_implementation(DECODE_ATTENTION)`.
"""

import torch

DECODE_ATTENTION = "ks_decode"


def decode_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """transformers' attention signature: QUERY (batch, heads, q, dim), KEY/VALUE (batch, kv heads, k, dim); the
    output (batch, q, heads, dim) and no weights."""
    from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward

    if query.shape[2] != 1 or (module.training and dropout > 0):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout, scaling, **kwargs)
    groups = getattr(module, "num_key_value_groups", 1)
    key, value = repeat_kv(key, groups), repeat_kv(value, groups)
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    # Scores in float32 whatever autocast says, as SDPA's kernels keep them: under bf16 autocast a matmul rounds each
    # score to bf16 (8 bits, up to 0.4% of its size: 0.5 of a score of 128), which moves a sharp head's weights
    # between neighbouring keys and so the rollout's log-probs away from the ones training computes. The static
    # cache holds float32 keys under autocast (the rotary embedding's product), so this reads them as they are.
    with torch.autocast(query.device.type, enabled=False):
        # keys times the query (a matrix-vector product down the cache's rows, as the values' product reads them):
        # the transposed form, query times keys, took a cuBLAS kernel reading the cache at a quarter of the bandwidth
        scores = torch.matmul(key.float(), query.float().transpose(2, 3)).transpose(2, 3) * scale  # (b, h, 1, keys)
        if attention_mask is not None:
            mask = attention_mask[..., : key.shape[2]]
            if mask.dtype == torch.bool:
                scores = scores.masked_fill(~mask, float("-inf"))
            else:
                scores = scores + mask
        probs = torch.softmax(scores, -1).to(value.dtype)
        return torch.matmul(probs, value).transpose(1, 2).contiguous(), None


def register():
    """Make DECODE_ATTENTION known to transformers (idempotent); returns its name."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(DECODE_ATTENTION, decode_attention_forward)
    AttentionMaskInterface.register(DECODE_ATTENTION, sdpa_mask)
    return DECODE_ATTENTION
