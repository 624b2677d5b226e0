"""A native workspace whose classic pybind binding hides at::matmul in C++: must be a violation."""

import torch
from torch import nn

from sandbox.native import load_extension

# No kernels/*.cu here, so the device is named: otherwise the build would target the CPU toolchain.
ext = load_extension(__file__, device="cuda")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return ext.matmul(A, B)
