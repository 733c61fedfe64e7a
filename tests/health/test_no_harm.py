"""First, do no harm: the check leaves model, optimizer, data and every random state exactly as
they were, bit for bit, even when the code under check trips most of the checks."""

from __future__ import annotations

import copy
import random

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

import torchdoctor


class Noisy(Dataset):
    """A dataset with its own generator (advanced by __getitem__ in the main process)."""

    def __init__(self) -> None:
        self.x = torch.randn(40, 6)
        self.y = torch.arange(40) % 3
        self.rng = np.random.default_rng(1)

    def __len__(self) -> int:
        return 40

    def __getitem__(self, i: int):  # type: ignore[no-untyped-def]
        return self.x[i] + float(self.rng.normal()), self.y[i]


class Busy(nn.Module):
    """Batch norm, dropout (functional, ignoring eval), a frozen layer and a stale gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(6, 16)
        self.norm = nn.BatchNorm1d(16)
        self.frozen = nn.Linear(16, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.dropout(torch.relu(self.norm(self.body(x))), 0.2)
        return torch.softmax(self.head(h + self.frozen(h)), dim=1)


def snapshot(model: nn.Module, optimizer: torch.optim.Optimizer, loader: DataLoader) -> dict:  # type: ignore[type-arg]
    return {
        "params": {n: (p.detach().clone(), None if p.grad is None else p.grad.clone(), p.requires_grad) for n, p in model.named_parameters()},
        "buffers": {n: b.clone() for n, b in model.named_buffers()},
        "training": {n: m.training for n, m in model.named_modules()},
        "optimizer": copy.deepcopy(optimizer.state_dict()),
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "dataset_rng": copy.deepcopy(loader.dataset.rng.bit_generator.state),
        "grad_enabled": torch.is_grad_enabled(),
        "dtype": torch.get_default_dtype(),
    }


def same(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b)
    return a == b


@pytest.mark.parametrize("as_batch", [False, True], ids=["loader", "batch"])
def test_check_changes_nothing(as_batch: bool) -> None:
    torch.manual_seed(0)
    model = Busy()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    loader = DataLoader(Noisy(), batch_size=8, shuffle=True)
    x, y = next(iter(loader))
    nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()  # the optimizer has state, the parameters have gradients
    optimizer.zero_grad(set_to_none=False)
    model.frozen.requires_grad_(False)  # frozen with a stale zero gradient: the step moves it
    random.seed(3)
    np.random.seed(4)
    batch = (x.clone(), y.clone())
    before = snapshot(model, optimizer, loader)
    data = batch if as_batch else loader

    report = torchdoctor.check(model, data, nn.CrossEntropyLoss(), optimizer, progress=False)

    assert {"TD101", "TD116", "TD130"} <= {f.rule for f in report.findings}  # it did look
    after = snapshot(model, optimizer, loader)
    for key in before:
        assert same(before[key], after[key]), f"the check changed {key}"
    if as_batch:
        assert torch.equal(batch[0], x) and torch.equal(batch[1], y)
    # and the random streams continue exactly where they were
    assert torch.equal(torch.rand(3), (torch.set_rng_state(before["torch"]), torch.rand(3))[1])


def test_check_does_not_leak_warnings(recwarn: pytest.WarningsRecorder) -> None:
    model = nn.Linear(4, 1)
    torchdoctor.check(model, (torch.randn(8, 4), torch.randn(8)), nn.MSELoss(), progress=False)  # broadcasts: warns
    assert not [w for w in recwarn if "target size" in str(w.message)]
