import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3 * 16 * 16, 192)

    def forward(self, x):
        p = F.unfold(x, kernel_size=16, stride=16).transpose(1, 2)
        return self.proj(p)


def get_inputs():
    return [torch.randn(4, 3, 128, 128)]


def get_init_inputs():
    return []
