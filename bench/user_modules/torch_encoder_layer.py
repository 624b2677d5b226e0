import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(
            d_model=128, nhead=4, dim_feedforward=256, dropout=0.0, batch_first=True
        )

    def forward(self, x):
        return self.layer(x)


def get_inputs():
    return [torch.randn(4, 64, 128)]


def get_init_inputs():
    return []
