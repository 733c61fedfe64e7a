"""Small LightningModules for the callback's tests: a correct one, and one per bug kind that
differs from it by the bug only. `# bug:` marks the line each finding must point at."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def loader(n: int = 64, seed: int = 0) -> DataLoader:
    gen = torch.Generator().manual_seed(seed)
    return DataLoader(TensorDataset(torch.randn(n, 8, generator=gen), torch.randint(0, 3, (n,), generator=gen)), batch_size=8)


class Classifier(LightningModule):
    """Correct: a body and a head, cross-entropy on logits, AdamW over every parameter."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1))
        self.head = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self(x)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], index: int) -> torch.Tensor:
        x, y = batch
        loss = F.cross_entropy(self.logits(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], index: int) -> None:
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=1e-2)


class SoftmaxBeforeCrossEntropy(Classifier):
    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self(x), dim=1)  # bug: TD101


class HeadLeftOutOfTheOptimizer(Classifier):
    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.body.parameters(), lr=1e-2)  # bug: TD114


class GraphCutInForward(Classifier):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.body(x).detach()  # bug: TD120
        return self.head(features)


class LayersInAPlainList(Classifier):
    def __init__(self) -> None:
        super().__init__()
        self.extra = [nn.Linear(16, 16) for _ in range(2)]  # bug: TD122

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.body(x)
        for layer in self.extra:
            features = torch.relu(layer(features))
        return self.head(features)


BUGGY = [SoftmaxBeforeCrossEntropy, HeadLeftOutOfTheOptimizer, GraphCutInForward, LayersInAPlainList]
