"""Correct training code, written the way careful people write it, gets no finding from any
detector (all of them observing at once, as under `torchdoctor run`)."""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from tests.observe.detectors.conftest import observing
from torchdoctor.observe.detectors import all_detectors


class Augmented(Dataset):
    """Random augmentation from torch's global generator, which every worker reseeds."""

    def __init__(self) -> None:
        generator = torch.Generator().manual_seed(0)
        self.images = torch.rand(64, 3, 8, 8, generator=generator)
        self.labels = torch.randint(0, 4, (64,), generator=generator)

    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        image = self.images[index]
        if torch.rand(()) < 0.5:
            image = image.flip(-1)
        return (image - 0.5) / 0.25, self.labels[index]


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.backbone.requires_grad_(False)  # pretrained, frozen, statistics kept
        self.body = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(8, 4))

    def train(self, mode: bool = True) -> Net:
        super().train(mode)
        self.backbone.eval()
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(self.backbone(x)))


@torch.no_grad()
def evaluate(model: nn.Module, loader: DataLoader) -> float:
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct / len(loader.dataset)


def careful_image_training(workers: int) -> None:
    torch.manual_seed(0)
    data = Augmented()
    sampler = DistributedSampler(data, num_replicas=1, rank=0, shuffle=True)
    loader = DataLoader(data, batch_size=16, sampler=sampler, num_workers=workers)
    validation = DataLoader(data, batch_size=32)
    model = Net()
    teacher = copy.deepcopy(model).requires_grad_(False).eval()
    ema = copy.deepcopy(model).requires_grad_(False)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2)
    scaler = torch.amp.GradScaler("cpu")
    for epoch in range(3):
        sampler.set_epoch(epoch)
        model.train()
        running = 0.0
        for step, (x, y) in enumerate(loader):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = model(x)
                with torch.no_grad():
                    soft = teacher(x).softmax(1)
                loss = nn.functional.cross_entropy(logits, y) + 0.1 * nn.functional.kl_div(logits.log_softmax(1), soft, reduction="batchmean")
            scaler.scale(loss / 2).backward()
            if step % 2 == 1:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad(set_to_none=True)
                with torch.no_grad():
                    for e, p in zip(ema.parameters(), model.parameters()):
                        e.mul_(0.99).add_(p.detach(), alpha=0.01)
            running += loss.item()
        scheduler.step()
        evaluate(model, validation)


class Decoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.GRUCell(6, 12)
        self.out = nn.Linear(12, 6)

    def forward(self, token: torch.Tensor, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.cell(token, hidden)
        return self.out(hidden), hidden


def careful_sequence_training() -> None:
    """A time-major decoder loop (one call per time step, with its state) and a truncated
    back-propagation through time that detaches the state between chunks."""
    torch.manual_seed(0)
    decoder = Decoder()
    optimizer = torch.optim.SGD(decoder.parameters(), lr=0.01, momentum=0.9)
    sequences = torch.randn(10, 8, 6)  # (time, batch, features)
    losses = []
    hidden = torch.zeros(8, 12)
    for chunk in range(4):
        hidden = hidden.detach()
        optimizer.zero_grad()
        loss = torch.zeros(())
        for t in range(9):
            prediction, hidden = decoder(sequences[t], hidden)
            loss = loss + nn.functional.mse_loss(prediction, sequences[t + 1])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())


def regression_with_numbers() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))
    loader = DataLoader(TensorDataset(torch.randn(128, 5), torch.randn(128, 1)), batch_size=16, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters())
    history = []
    for epoch in range(2):
        total = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.detach()
            history.append(loss.detach())
        model.eval()
        with torch.inference_mode():
            model(torch.randn(4, 5))
        model.train()


def test_careful_image_training_gets_no_finding() -> None:
    with observing(*all_detectors()) as observed:
        careful_image_training(workers=0)
    assert observed.findings == []


def test_careful_image_training_with_workers_gets_no_finding() -> None:
    with observing(*all_detectors()) as observed:
        careful_image_training(workers=2)
    assert observed.findings == []


def test_careful_sequence_training_gets_no_finding() -> None:
    with observing(*all_detectors()) as observed:
        careful_sequence_training()
    assert observed.findings == []


def test_regression_gets_no_finding() -> None:
    with observing(*all_detectors()) as observed:
        regression_with_numbers()
    assert observed.findings == []
