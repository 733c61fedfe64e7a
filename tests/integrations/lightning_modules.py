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


class AccuracyPeekInEvalMode(Classifier):
    """Measures each batch's accuracy in eval mode after the step, and stays there."""

    def on_train_batch_end(self, outputs: object, batch: tuple[torch.Tensor, torch.Tensor], index: int) -> None:
        self.eval()  # bug: TD131
        with torch.no_grad():
            self.log("train_acc", (self(batch[0]).argmax(1) == batch[1]).float().mean())


class AccuracyPeekBackInTrainMode(AccuracyPeekInEvalMode):
    """Correct twin: back to train mode after the peek."""

    def on_train_batch_end(self, outputs: object, batch: tuple[torch.Tensor, torch.Tensor], index: int) -> None:
        super().on_train_batch_end(outputs, batch, index)
        self.train()


class PrototypeDistances(Classifier):
    """Distances to prototypes taken from training samples: sqrt at 0, an infinite gradient."""

    eps = 0.0

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Identity()
        self.prototypes = nn.Parameter(next(iter(loader()))[0][:4].clone())
        self.head = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        distance = torch.sqrt(((x[:, None, :] - self.prototypes[None]) ** 2).sum(dim=2) + self.eps)  # bug: TD145
        return self.head(-distance)


class PrototypeDistancesWithEpsilon(PrototypeDistances):
    """Correct twin: an epsilon under the square root."""

    eps = 1e-12


BUGGY = [SoftmaxBeforeCrossEntropy, HeadLeftOutOfTheOptimizer, GraphCutInForward, LayersInAPlainList, AccuracyPeekInEvalMode,
         PrototypeDistances]
CORRECT = [Classifier, AccuracyPeekBackInTrainMode, PrototypeDistancesWithEpsilon]
