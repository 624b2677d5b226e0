import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.pw = nn.Conv2d(32, 64, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(64)

    def forward(self, x):
        x = F.relu6(self.bn1(self.dw(x)))
        return F.relu6(self.bn2(self.pw(x)))


def get_inputs():
    return [torch.randn(8, 32, 56, 56)]


def get_init_inputs():
    return []
