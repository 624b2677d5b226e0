import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(128, 4, batch_first=True)

    def forward(self, x, lengths):
        mask = torch.arange(x.shape[1], device=x.device)[None, :] >= lengths[:, None]
        out, _ = self.mha(x, x, x, key_padding_mask=mask, need_weights=False)
        return out


def get_inputs():
    return [torch.randn(4, 64, 128), torch.randint(1, 65, (4,))]


def get_init_inputs():
    return []
