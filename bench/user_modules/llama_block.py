import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    def __init__(self, d=256, heads=4):
        super().__init__()
        self.h = heads
        self.norm1 = RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.norm2 = RMSNorm(d)
        self.gate = nn.Linear(d, 512, bias=False)
        self.up = nn.Linear(d, 512, bias=False)
        self.down = nn.Linear(512, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, d // heads, 2).float() / (d // heads)))
        t = torch.arange(128).float()
        f = torch.outer(t, inv)
        emb = torch.cat((f, f), dim=-1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())

    def forward(self, x):
        b, s, d = x.shape
        h = self.norm1(x)
        q, k, v = self.qkv(h).split(d, dim=-1)
        q = q.view(b, s, self.h, -1).transpose(1, 2)
        k = k.view(b, s, self.h, -1).transpose(1, 2)
        v = v.view(b, s, self.h, -1).transpose(1, 2)
        cos, sin = self.cos[:s], self.sin[:s]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, d))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def get_inputs():
    return [torch.randn(2, 128, 256)]


def get_init_inputs():
    return []
