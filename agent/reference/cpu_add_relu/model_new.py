import torch.nn as nn

from sandbox.native import load_extension

ext = load_extension(__file__)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return ext.add_relu(x.contiguous(), y.contiguous())
