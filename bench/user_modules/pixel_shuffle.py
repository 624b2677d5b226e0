import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 64, 3, padding=1)
        self.ps = nn.PixelShuffle(2)

    def forward(self, x):
        return torch.tanh(self.ps(self.conv(x)))


def get_inputs():
    return [torch.randn(4, 16, 32, 32)]


def get_init_inputs():
    return []
