"""95_CrossEntropyLoss as a native workspace: a warp per row computes logsumexp minus the target's logit in one
read of the logits; a second tiny kernel averages the per-block sums deterministically."""

import torch
from torch import nn

from sandbox.native import load_extension

ops = load_extension(__file__)

# Upper bound on the first kernel's blocks (it grid-strides over rows); one partial sum each.
PARTIALS = 2048


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        if predictions.dtype != torch.float32 or not predictions.is_cuda or predictions.dim() != 2:
            raise TypeError("this cross-entropy takes (rows, classes) float32 CUDA logits")
        if targets.dtype != torch.int64 or targets.shape != predictions.shape[:1]:
            raise TypeError("this cross-entropy takes int64 class indices, one per row")
        predictions, targets = predictions.contiguous(), targets.contiguous()
        partial = predictions.new_empty(PARTIALS)
        out = predictions.new_empty(())
        ops.cross_entropy(predictions, targets, partial, out)
        return out
