import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, logits, target):
        logp = logits.log_softmax(-1)
        return -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1).mean()


def get_inputs():
    return [torch.randn(64, 1000), torch.randint(0, 1000, (64,))]


def get_init_inputs():
    return []
