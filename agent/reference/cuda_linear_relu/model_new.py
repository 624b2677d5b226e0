import torch.nn as nn

from sandbox.native import load_extension

ext = load_extension(__file__)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        # The same module as Model's, created in the same order: the sandbox seeds both alike, so the
        # weights are equal. Only its parameters are used; its forward (a PyTorch operator) is not.
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.linear_relu(x.contiguous(), self.linear.weight, self.linear.bias)
