"""Both sides of the DataLoader checks (the positive cases are also the rules' doc examples)."""

from __future__ import annotations

from tests.health.conftest import by_rule, codes, status
from torchdoctor.health.checks.loader import human_bytes, unpicklable

HEADER = """import functools
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, get_worker_info

class Jitter(Dataset):
    def __init__(self):
        self.x, self.y = torch.randn(32, 8), torch.arange(32) % 3
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return 32

    def __getitem__(self, i):
        return self.x[i] + float(self.rng.normal()), self.y[i]

def reseed(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)

def stack(batch, scale=1.0):
    return torch.stack([x for x, _ in batch]) * scale, torch.stack([y for _, y in batch])
"""


def make(loader: str) -> str:
    return HEADER + f"""
def make():
    return {{"model": nn.Linear(8, 3), "data": {loader}, "loss_fn": nn.CrossEntropyLoss()}}
"""


def test_reseeded_workers_and_partial_collate_are_fine(check_source) -> None:  # type: ignore[no-untyped-def]
    report = check_source(make("DataLoader(Jitter(), batch_size=8, num_workers=2, worker_init_fn=reseed, "
                               "collate_fn=functools.partial(stack, scale=2.0))"))
    assert not {"TD140", "TD142", "TD312", "TD313", "TD314"} & codes(report)
    assert status(report, "dataloader") == "passed"


def test_generators_without_workers_are_fine(check_source) -> None:  # type: ignore[no-untyped-def]
    assert "TD140" not in codes(check_source(make("DataLoader(Jitter(), batch_size=8)")))


def test_a_generator_copied_into_workers_points_at_its_line(check_source) -> None:  # type: ignore[no-untyped-def]
    found = by_rule(check_source(make("DataLoader(Jitter(), batch_size=8, num_workers=2)")), "TD140")
    assert found and found[0].line == 10 and "`self.rng`" in found[0].message


def test_unpicklable_functions_are_an_error_under_spawn(check_source) -> None:  # type: ignore[no-untyped-def]
    loader = "DataLoader(Jitter(), batch_size=8, num_workers=2, worker_init_fn=lambda i: None)"
    under_fork = by_rule(check_source(make(loader), start_method="fork"), "TD142")
    under_spawn = by_rule(check_source(make(loader), start_method="spawn"), "TD142")
    assert under_fork[0].severity.value == "warning" and under_spawn[0].severity.value == "error"
    assert "worker_init_fn=a lambda" in under_spawn[0].message and under_spawn[0].line == 26


def test_an_unpicklable_dataset_names_the_attribute(check_source) -> None:  # type: ignore[no-untyped-def]
    source = make("DataLoader(Jitter(), batch_size=8, num_workers=2, worker_init_fn=reseed)").replace(
        "        self.rng = np.random.default_rng(0)\n", "        self.rng = np.random.default_rng(0)\n        self.transform = lambda x: x\n"
    )
    found = by_rule(check_source(source), "TD142")
    assert found and "Jitter.transform is a lambda" in found[0].message and found[0].line == 11


def test_shared_memory_is_compared_with_what_the_workers_prefetch(check_source) -> None:  # type: ignore[no-untyped-def]
    loader = "DataLoader(Jitter(), batch_size=8, num_workers=2, worker_init_fn=reseed)"
    assert "TD313" not in codes(check_source(make(loader), shm_free_bytes=64 * 2**20))
    found = by_rule(check_source(make(loader), shm_free_bytes=100), "TD313")
    assert found and "2 workers x prefetch 2" in found[0].message


def test_helpers() -> None:
    assert unpicklable(lambda: 0) is not None and unpicklable(len) is None
    assert human_bytes(64 * 2**20) == "67.1 MB" and human_bytes(12) == "12 B"
