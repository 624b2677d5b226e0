import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab=1000, d=128, maxlen=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(maxlen, d)
        self.typ = nn.Embedding(2, d)
        self.ln = nn.LayerNorm(d)

    def forward(self, ids, types):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        return self.ln(self.tok(ids) + self.pos(pos) + self.typ(types))


def get_inputs():
    return [torch.randint(0, 1000, (8, 128)), torch.randint(0, 2, (8, 128))]


def get_init_inputs():
    return []
