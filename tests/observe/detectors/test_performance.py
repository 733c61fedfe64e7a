"""TD163 (a module called per sample) and TD452 (host-device syncs every step), both sides.

No GPU here: the sync detector is exercised with CPU tensors standing in for device tensors
(the environment switch the doc proof uses), and is shown to stay idle on a plain CPU run.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.observe.detectors.conftest import line_of, observing
from torchdoctor.core.finding import Severity
from torchdoctor.observe.detectors.performance import ENV_DEVICE_CHECKS_ON_CPU, HostSyncs, PerSampleLoop

HERE = __file__


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))


def fit(model: nn.Module, forward, steps: int = 3) -> None:  # type: ignore[no-untyped-def]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        optimizer.zero_grad()
        forward(model, torch.randn(16, 6)).pow(2).mean().backward()
        optimizer.step()


def per_sample(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return torch.cat([model(x[i:i + 1]) for i in range(x.shape[0])])  # one call per sample


def unbound(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return torch.stack([model(sample) for sample in x])  # iterating the batch


def batched(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return model(x)


def time_steps(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """A loop over the second dimension (time), each call on the whole batch."""
    sequence = x.view(16, 3, 2)
    cell = model[0]
    return torch.stack([cell(torch.cat([sequence[:, t], sequence[:, t], sequence[:, t]], 1)) for t in range(3)])


def test_a_model_called_per_sample_is_flagged_once_at_the_loop() -> None:
    with observing(PerSampleLoop) as observed:
        fit(mlp(), per_sample)
    finding = observed.one("TD163")  # the model, not also its first layer
    assert finding.line == line_of(HERE, "# one call per sample")
    assert "16 times per step" in finding.message


def test_iterating_over_the_batch_is_flagged() -> None:
    with observing(PerSampleLoop) as observed:
        fit(mlp(), unbound)
    assert observed.one("TD163").line == line_of(HERE, "# iterating the batch")


def test_batched_calls_and_loops_over_time_are_not_flagged() -> None:
    with observing(PerSampleLoop) as observed:
        fit(mlp(), batched)
        fit(mlp(), time_steps)
    assert observed.codes == set()


def item_every_step(every: int, steps: int = 30) -> float:
    model = nn.Linear(4, 1)
    optimizer = torch.optim.Adam(model.parameters())  # reads its step counter with .item() itself
    total = 0.0
    for step in range(steps):
        optimizer.zero_grad()
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        optimizer.step()
        if step % every == 0:
            total += loss.item()  # logging
            if loss > 10:  # a tensor as a condition
                total += 1
    return total


@pytest.fixture
def device_checks_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_DEVICE_CHECKS_ON_CPU, "1")


def test_syncs_every_step_are_flagged_per_line(device_checks_on_cpu: None) -> None:
    with observing(HostSyncs) as observed:
        item_every_step(every=1)
    lines = {f.line: f for f in observed.findings}
    assert set(lines) == {line_of(HERE, "# logging"), line_of(HERE, "# a tensor as a condition")}
    assert "`loss.item()`" in lines[line_of(HERE, "# logging")].message
    assert all(f.severity is Severity.INFO for f in observed.findings)  # two per step: advice


def test_syncs_every_few_steps_are_not_flagged(device_checks_on_cpu: None) -> None:
    with observing(HostSyncs) as observed:
        item_every_step(every=10)
    assert observed.codes == set()


def test_cpu_runs_have_nothing_to_synchronise() -> None:
    with observing(HostSyncs) as observed:
        item_every_step(every=1)
    assert observed.codes == set()
