"""A small matrix product: the problem of the tests that hide torch.matmul behind a custom operator."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(512, 256), torch.randn(256, 384)]


def get_init_inputs():
    return []
