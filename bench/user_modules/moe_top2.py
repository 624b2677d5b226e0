import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Model(nn.Module):
    def __init__(self, d=128, hidden=256, n_experts=4, top_k=2):
        super().__init__()
        self.top_k = top_k
        self.router = nn.Linear(d, n_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d, hidden) for _ in range(n_experts))

    def forward(self, x):
        probs = F.softmax(self.router(x), dim=-1)
        weights, idx = torch.topk(probs, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        dense = torch.stack([e(x) for e in self.experts], dim=-2)
        picked = torch.gather(dense, -2, idx.unsqueeze(-1).expand(*idx.shape, x.shape[-1]))
        return (weights.unsqueeze(-1) * picked).sum(dim=-2)


def get_inputs():
    return [torch.randn(4, 64, 128)]


def get_init_inputs():
    return []
