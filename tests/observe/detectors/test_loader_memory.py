"""TD442: the host memory of DataLoader workers (batches in flight; copy on access), both sides."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset

from tests.observe.detectors.conftest import line_of, observing
from torchdoctor.observe.detectors import loader_memory
from torchdoctor.observe.detectors.loader_memory import LoaderHostMemory
from torchdoctor.observe.detectors.memory_account import MemoryAccount

HERE = __file__


def train_on(loader: DataLoader, epochs: int = 1) -> None:  # type: ignore[type-arg]
    model = nn.Linear(16, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x[:, :16].float()), y).backward()
            optimizer.step()


def findings(run) -> list:  # type: ignore[no-untyped-def]
    with observing(MemoryAccount, LoaderHostMemory) as observed:
        run()
    return [f for f in observed.findings if f.rule == "TD442"]


def big_batches() -> None:
    data = TensorDataset(torch.randn(256, 4096), torch.randint(0, 4, (256,)))
    loader = DataLoader(data, batch_size=64, num_workers=2)  # 1 MiB batches
    train_on(loader)


def test_batches_in_flight_are_counted_against_the_memory_available(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader_memory, "available", lambda: 8 * 2**20)
    [finding] = findings(big_batches)
    assert finding.line == line_of(HERE, "loader = DataLoader(data, batch_size=64, num_workers=2)")
    assert "2 workers x prefetch_factor 2 = 4 batches of 1.0 MiB in flight, 4.0 MiB in shared memory" in finding.message
    assert "prefetch_factor" in finding.hint


@pytest.mark.filterwarnings("ignore:.pin_memory. argument is set as true")  # no accelerator here
def test_pinned_batches_in_flight_count_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader_memory, "available", lambda: 8 * 2**20)
    monkeypatch.setattr(loader_memory, "_accelerator", lambda: True)

    def pinned() -> None:
        data = TensorDataset(torch.randn(256, 4096), torch.randint(0, 4, (256,)))
        train_on(DataLoader(data, batch_size=64, num_workers=2, pin_memory=True))

    [finding] = findings(pinned)
    assert "4.0 MiB in shared memory (/dev/shm holds" in finding.message
    assert "and 4.0 MiB more in page-locked memory (`pin_memory=True`)" in finding.message


def test_batches_in_flight_that_fit_are_not_reported() -> None:
    assert findings(big_batches) == []


class Rows(Dataset):  # type: ignore[type-arg]
    def __init__(self, as_array: bool) -> None:
        values = [float(i % 97) for i in range(4_000_000)]
        self.values = np.array(values) if as_array else values

    def __len__(self) -> int:
        return 2000

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        row = self.values[index * 2000:(index + 1) * 2000]
        return torch.tensor(row[:16]).float(), torch.tensor(int(sum(row[:4])) % 4)


@pytest.mark.slow
def test_a_dataset_of_python_objects_copied_into_every_worker_is_reported() -> None:
    [finding] = findings(lambda: train_on(DataLoader(Rows(as_array=False), batch_size=50, num_workers=2), epochs=2))
    assert "`self.values` holds 4,000,000 Python objects" in finding.message
    assert "copy on access" in finding.message and "NumPy array" in finding.hint


@pytest.mark.slow
def test_a_dataset_kept_in_one_array_is_not() -> None:
    assert findings(lambda: train_on(DataLoader(Rows(as_array=True), batch_size=50, num_workers=2), epochs=2)) == []
