"""y = 2x + 1 on 4096 floats: launch-bound, where CUDA-graph timing should beat per-call events."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2 + 1


def get_inputs():
    return [torch.randn(4096)]


def get_init_inputs():
    return []
