"""Crash explanations of torch.distributed, on real exceptions in-process (a gloo process group
of one rank; the several-rank cases are in test_distributed.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from tests.run.test_crash import explained, line_of


@pytest.fixture
def one_rank(tmp_path: Path) -> Iterator[None]:
    """A process group of one rank, and nothing of it left behind: a DDP reducer collected later,
    in a forked DataLoader worker of another test, would hang that worker in gloo's destructor."""
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        yield
    finally:
        gc.collect()  # the DDP model lives on in the explained exception's frames until now
        dist.destroy_process_group()
        assert not [o for o in gc.get_objects() if type(o) is nn.parallel.DistributedDataParallel]


class TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.head = nn.Linear(8, 4)
        self.aux = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def test_ddps_unused_parameter_error_names_the_parameters(one_rank: None) -> None:
    model = nn.parallel.DistributedDataParallel(TwoHeads())  # built before observing: only the crash tells
    x, y = torch.randn(4, 8), torch.randint(0, 4, (4,))

    def two_steps() -> None:
        for _ in range(2):
            F.cross_entropy(model(x), y).backward()

    finding = explained(two_steps)
    assert finding.rule == "TD463" and finding.line == line_of("model(x)", two_steps)
    assert "2 parameter(s) got no gradient in the first training step: `aux.weight`, `aux.bias`" in finding.message
    assert "Expected to have finished reduction in the prior iteration" in finding.evidence["exception"]
