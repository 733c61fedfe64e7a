"""TD146: float64 creeping into float32 training, on both sides."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from tests.observe.detectors.conftest import line_of, observing, run_lab
from torchdoctor.observe.detectors.dtype import Float64

HERE = __file__


def regress(model: nn.Module, x: torch.Tensor, y: torch.Tensor, steps: int = 3) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)  # the loss call
        loss.backward()
        optimizer.step()


class MixesFloat64(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self.register_buffer("scale", torch.tensor([2.0], dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * self.scale


class HalfDouble(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self.gain = nn.Parameter(torch.ones(1, dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.fc(x) * self.gain).float()


def numpy_targets() -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(0).normal(size=(8, 1)))


def test_float64_targets_are_flagged_at_the_loss_call() -> None:
    with observing(Float64) as observed:
        regress(nn.Linear(4, 1), torch.randn(8, 4), numpy_targets())
    finding = observed.one("TD146")
    assert finding.line == line_of(HERE, "# the loss call")
    assert "the target of `mse_loss` is float64" in finding.message


def test_float64_promotion_in_forward_points_at_that_forward() -> None:
    with observing(Float64) as observed:
        regress(MixesFloat64(), torch.randn(8, 4), torch.randn(8, 1))
    finding = observed.one("TD146")
    assert finding.line == MixesFloat64.forward.__code__.co_firstlineno
    assert "MixesFloat64" in finding.message


def test_float64_parameter_beside_float32_ones_is_flagged_where_it_is_made() -> None:
    with observing(Float64) as observed:
        regress(HalfDouble(), torch.randn(8, 4), torch.randn(8, 1))
    finding = observed.one("TD146")
    assert finding.line == line_of(HERE, "self.gain = nn.Parameter")
    assert "`gain`" in finding.message


def test_float32_and_float64_throughout_are_not_flagged() -> None:
    with observing(Float64) as observed:
        regress(nn.Linear(4, 1), torch.randn(8, 4), numpy_targets().float())
        regress(nn.Linear(4, 1).double(), torch.randn(8, 4, dtype=torch.float64), numpy_targets())
    assert observed.codes == set()


def test_lab_fixed_twin_converts_the_features() -> None:
    assert run_lab("05_float64_inputs_from_numpy.py", (Float64,), fixed=True, steps=20).codes == set()
