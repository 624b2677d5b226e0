"""Test double of tests/gpu/test_gpu_anti_hacking.py: y = 2x + 1, honest or misbehaving on purpose.

The tests copy this workspace and rewrite BEHAVIOR and SPIN_US; binding and kernels stay the same, so every
variant shares one build.
"""

import torch
from torch import nn

from sandbox.native import load_extension

BEHAVIORS = ("honest", "side_stream", "illegal_address", "hang", "half_output")
BEHAVIOR = "honest"
SPIN_US = 0

ops = load_extension(__file__)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        ops.scale(x, out, BEHAVIORS.index(BEHAVIOR), SPIN_US)
        return out
