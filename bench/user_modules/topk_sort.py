import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        v, i = torch.topk(x, 8, dim=-1)
        s, _ = torch.sort(x, dim=-1, descending=True)
        return v.sum(-1) + s[:, :4].mean(-1) + i.float().mean(-1)


def get_inputs():
    return [torch.randn(512, 256)]


def get_init_inputs():
    return []
