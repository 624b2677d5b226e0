import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 64, 64) * 0.05)

    def forward(self, x, y):
        return torch.einsum("bi,kij,bj->bk", x, self.w, y)


def get_inputs():
    return [torch.randn(128, 64), torch.randn(128, 64)]


def get_init_inputs():
    return []
