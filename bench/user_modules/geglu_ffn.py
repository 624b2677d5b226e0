import torch.nn as nn
import torch.nn.functional as F
import torch


class GEGLU(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out * 2)

    def forward(self, x):
        x, gate = self.proj(x).chunk(2, dim=-1)
        return x * F.gelu(gate)


class Model(nn.Module):
    def __init__(self, dim=320, mult=4):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.net = nn.Sequential(GEGLU(dim, dim * mult), nn.Dropout(0.0), nn.Linear(dim * mult, dim))

    def forward(self, x):
        return self.net(self.norm(x)) + x


def get_inputs():
    return [torch.randn(2, 128, 320)]


def get_init_inputs():
    return []
