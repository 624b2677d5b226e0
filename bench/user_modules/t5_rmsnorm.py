import torch
import torch.nn as nn


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class Model(nn.Module):
    def __init__(self, d=512, ff=1024):
        super().__init__()
        self.norm = T5LayerNorm(d)
        self.wi = nn.Linear(d, ff, bias=False)
        self.wo = nn.Linear(ff, d, bias=False)

    def forward(self, x):
        h = self.norm(x.float()).type_as(x)
        return x + self.wo(torch.relu(self.wi(h)))


def get_inputs():
    return [torch.randn(2, 64, 512)]


def get_init_inputs():
    return []
