"""TD140: generators on the dataset copied into every DataLoader worker, with real workers."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from tests.lab import LAB
from tests.observe.detectors.conftest import line_of, observing, run_lab
from torchdoctor.observe.detectors.worker_rng import WorkerRandomness, digest

HERE = __file__


class Jittered(Dataset):
    def __init__(self, kind: str = "numpy", use: bool = True) -> None:
        self.use = use
        if kind == "numpy":
            self.rng = np.random.default_rng(0)  # copied into every worker
        elif kind == "random":
            self.rng = random.Random(0)
        else:
            self.rng = torch.Generator().manual_seed(0)
        self.order = np.random.default_rng(1).permutation(16)  # used here only, never in a worker

    def __len__(self) -> int:
        return 16

    def __getitem__(self, index: int) -> torch.Tensor:
        if not self.use:
            return torch.tensor(float(index))
        if isinstance(self.rng, torch.Generator):
            return torch.rand((), generator=self.rng)
        if isinstance(self.rng, random.Random):
            return torch.tensor(self.rng.random())
        return torch.tensor(self.rng.normal())


def reseed(worker_id: int) -> None:
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)


def iterate(loader: DataLoader, epochs: int = 2) -> None:
    for _ in range(epochs):
        for _batch in loader:
            pass


def test_digest_reads_without_drawing() -> None:
    generator = np.random.default_rng(0)
    before = generator.bit_generator.state
    assert digest(generator) == digest(generator)
    assert generator.bit_generator.state == before
    assert digest(np.random.RandomState(0)) != digest(np.random.RandomState(1))
    assert digest(torch.Generator().manual_seed(0)) != digest(torch.Generator().manual_seed(1))


@pytest.mark.slow
def test_lab_generator_in_dataset_init_is_flagged_where_it_is_made() -> None:
    observed = run_lab("14_rng_object_in_dataset_workers.py", (WorkerRandomness,), steps=12)
    finding = observed.one("TD140")
    assert finding.line == line_of(LAB / "14_rng_object_in_dataset_workers.py", "self.rng = np.random.default_rng(0)")
    assert "`self.rng` (np.random.Generator)" in finding.message and "JitteredDataset" in finding.message


@pytest.mark.slow
def test_lab_fixed_twin_reseeds_in_worker_init_fn() -> None:
    assert run_lab("14_rng_object_in_dataset_workers.py", (WorkerRandomness,), fixed=True, steps=12).codes == set()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["random", "torch"])
def test_other_generator_kinds(kind: str) -> None:
    with observing(WorkerRandomness) as observed:
        iterate(DataLoader(Jittered(kind), batch_size=4, num_workers=2), epochs=1)
    assert "TD140" in observed.codes


@pytest.mark.slow
def test_one_worker_repeats_every_epoch() -> None:
    with observing(WorkerRandomness) as observed:
        iterate(DataLoader(Jittered(), batch_size=4, num_workers=1), epochs=2)
    assert observed.one("TD140").evidence["identical"] == "in every epoch"


@pytest.mark.slow
def test_generators_the_workers_do_not_use_are_not_flagged() -> None:
    with observing(WorkerRandomness) as observed:
        iterate(DataLoader(Jittered(use=False), batch_size=4, num_workers=2), epochs=2)
    assert observed.codes == set()


@pytest.mark.slow
def test_reseeded_workers_and_single_process_loading_are_not_flagged() -> None:
    with observing(WorkerRandomness) as observed:
        iterate(DataLoader(Jittered(), batch_size=4, num_workers=2, worker_init_fn=reseed), epochs=2)
        iterate(DataLoader(Jittered(), batch_size=4, num_workers=0), epochs=2)
    assert observed.codes == set()
