"""y = 2x + 1 on 16 MB: the problem of the anti-hacking tests (small, so each evaluation takes seconds)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2 + 1


def get_inputs():
    return [torch.randn(2048, 2048)]


def get_init_inputs():
    return []
