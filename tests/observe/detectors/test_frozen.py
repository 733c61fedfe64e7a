"""TD116: frozen parameters changed by optimizer.step(), on both sides."""

from __future__ import annotations

import torch
from torch import nn

from tests.lab import LAB
from tests.observe.detectors.conftest import line_of, observing, run_lab
from torchdoctor.observe.detectors.frozen import FrozenUpdates

HERE = __file__


def test_lab_frozen_layers_decayed_points_at_the_optimizer() -> None:
    observed = run_lab("19_frozen_parameters_decayed.py", (FrozenUpdates,), steps=20)
    finding = observed.one("TD116")
    assert finding.line == line_of(LAB / "19_frozen_parameters_decayed.py", "optimizer = torch.optim.AdamW(model.parameters()")
    assert "`body.0.weight`" in finding.message and "weight_decay=0.05" in finding.message


def test_lab_fixed_twin_gives_the_optimizer_trainable_parameters_only() -> None:
    assert run_lab("19_frozen_parameters_decayed.py", (FrozenUpdates,), fixed=True, steps=20).codes == set()


def train(set_to_none: bool, weight_decay: float, freeze_at: int = 2, steps: int = 8) -> nn.Module:
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=weight_decay)  # all parameters
    for step in range(steps):
        if step == freeze_at:
            model[0].requires_grad_(False)
        optimizer.zero_grad(set_to_none=set_to_none)
        model(torch.randn(8, 4)).pow(2).mean().backward()
        optimizer.step()
    return model


def test_zero_gradients_kept_on_frozen_parameters_are_flagged_at_the_optimizer() -> None:
    with observing(FrozenUpdates) as observed:
        train(set_to_none=False, weight_decay=0.1)
    assert observed.one("TD116").line == line_of(HERE, "# all parameters")


def test_frozen_parameters_without_gradients_are_skipped_by_the_optimizer() -> None:
    with observing(FrozenUpdates) as observed:
        train(set_to_none=True, weight_decay=0.1)
    assert observed.codes == set()


def test_a_zero_gradient_that_moves_nothing_is_not_flagged() -> None:
    """Plain SGD without weight decay or momentum leaves a zero-gradient parameter as it is."""
    with observing(FrozenUpdates) as observed:
        train(set_to_none=False, weight_decay=0.0)
    assert observed.codes == set()


def test_freezing_after_the_first_checks_is_seen_later() -> None:
    with observing(FrozenUpdates) as observed:
        train(set_to_none=False, weight_decay=0.1, freeze_at=10, steps=40)
    assert "TD116" in observed.codes
