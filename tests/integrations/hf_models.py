"""Tiny Hugging Face models for the callback's tests, built from configs (nothing is downloaded):
a correct classifier over a one-layer BERT encoder, and one per bug kind that differs from it by
the bug only. `# bug:` marks the line each finding must point at."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from transformers import BertConfig, BertModel

CONFIG = dict(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
              max_position_embeddings=16)
CLASSES = 3


def config() -> BertConfig:
    return BertConfig(**CONFIG, num_labels=CLASSES)


class Tokens(torch.utils.data.Dataset):
    """Random token ids with a class label each (deterministic per index)."""

    def __init__(self, size: int = 32, top_label: int = CLASSES - 1) -> None:
        self.size, self.top_label = size, top_label

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        gen = torch.Generator().manual_seed(index)
        return {"input_ids": torch.randint(0, CONFIG["vocab_size"], (8,), generator=gen),
                "labels": torch.tensor(index % (self.top_label + 1))}


class TextClassifier(nn.Module):
    """Correct: the encoder's first token through a linear head, cross-entropy on the logits."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = BertModel(config(), add_pooling_layer=False)
        self.head = nn.Linear(CONFIG["hidden_size"], CLASSES)

    def features(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.encoder(input_ids=input_ids).last_hidden_state[:, 0]

    def scores(self, features: torch.Tensor) -> torch.Tensor:
        return self.head(features)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        logits = self.scores(self.features(input_ids))
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = F.cross_entropy(logits, labels)
        return out


class SoftmaxBeforeCrossEntropy(TextClassifier):
    def scores(self, features: torch.Tensor) -> torch.Tensor:
        return F.softmax(self.head(features), dim=-1)  # bug: TD101


class EncoderCutFromTheGraph(TextClassifier):
    def features(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.encoder(input_ids=input_ids).last_hidden_state[:, 0].detach()  # bug: TD120


class HeadsInAPlainList(TextClassifier):
    def __init__(self) -> None:
        super().__init__()
        self.heads = [nn.Linear(CONFIG["hidden_size"], CLASSES) for _ in range(2)]  # bug: TD122

    def scores(self, features: torch.Tensor) -> torch.Tensor:
        return self.head(features) + sum(head(features) for head in self.heads)


BUGGY = [SoftmaxBeforeCrossEntropy, EncoderCutFromTheGraph, HeadsInAPlainList]
