import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(32, 64)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        h = torch.zeros(x.shape[0], 64, device=x.device)
        c = torch.zeros_like(h)
        for t in range(x.shape[1]):
            h, c = self.cell(x[:, t], (h, c))
        return self.head(h)


def get_inputs():
    return [torch.randn(16, 12, 32)]


def get_init_inputs():
    return []
