import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_embeddings=10000, dim=64, num_fields=3):
        super().__init__()
        self.bags = nn.ModuleList(nn.EmbeddingBag(num_embeddings, dim, mode="sum") for _ in range(num_fields))
        self.out = nn.Linear(num_fields * dim, 1)

    def forward(self, ids, weights):
        pooled = [bag(ids[:, i], per_sample_weights=weights[:, i]) for i, bag in enumerate(self.bags)]
        return torch.sigmoid(self.out(torch.cat(pooled, dim=1)))


def get_inputs():
    return [torch.randint(0, 10000, (256, 3, 20)), torch.rand(256, 3, 20)]


def get_init_inputs():
    return []
