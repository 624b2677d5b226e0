"""A native workspace whose op hides torch.mm in C++ (through the dispatcher): must be a violation."""

import torch
from torch import nn

from sandbox.native import load_extension

# No kernels/*.cu here, so the device is named: otherwise the build would target the CPU toolchain.
ops = load_extension(__file__, device="cuda")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return ops.mm(A.contiguous(), B.contiguous())
