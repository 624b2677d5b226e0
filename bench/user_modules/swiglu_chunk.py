import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Linear(256, 1024)
        self.o = nn.Linear(512, 256)

    def forward(self, x):
        a, g = self.w(x).chunk(2, dim=-1)
        return self.o(a * F.silu(g))


def get_inputs():
    return [torch.randn(512, 256)]


def get_init_inputs():
    return []
