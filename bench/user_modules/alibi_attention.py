import math

import torch
import torch.nn as nn


def alibi_slopes(n_heads):
    start = 2 ** (-(2 ** -(math.log2(n_heads) - 3)))
    return torch.tensor([start * start**i for i in range(n_heads)])


class Model(nn.Module):
    def __init__(self, d=256, heads=8, max_len=256):
        super().__init__()
        self.h = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        pos = torch.arange(max_len)
        rel = (pos[None, :] - pos[:, None]).float()
        self.register_buffer("alibi", alibi_slopes(heads)[:, None, None] * rel[None])
        self.register_buffer("causal", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.h, c // self.h).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        att = att + self.alibi[:, :t, :t]
        att = att.masked_fill(~self.causal[:t, :t], float("-inf"))
        att = att.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


def get_inputs():
    return [torch.randn(2, 128, 256)]


def get_init_inputs():
    return []
