"""TD112 (clipping before backward) and TD113 (clipping scaled AMP gradients), both sides.

torch.amp.GradScaler works on the CPU in torch 2.13 (checked below), so the AMP order is
tested for real.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.observe.detectors.conftest import line_of, observing
from torchdoctor.observe.detectors.clipping import Clipping

HERE = __file__


def train(order: str, steps: int = 4, amp: bool = False) -> None:
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", enabled=amp)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = model(torch.randn(8, 4)).pow(2).mean()
        if order == "clip-first":
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # before backward
            scaler.scale(loss).backward()
        elif order == "backward-first":
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)
        elif order == "unscale-first":
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()


def train_clipping_after_step(amp: bool, steps: int = 4) -> None:
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", enabled=amp)
    for _ in range(steps):
        optimizer.zero_grad()
        scaler.scale(model(torch.randn(8, 4)).pow(2).mean()).backward()
        scaler.step(optimizer)
        scaler.update()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # after the step


def test_clipping_before_backward_is_flagged_at_the_clip() -> None:
    with observing(Clipping) as observed:
        train("clip-first")
    found = observed.one("TD112")
    assert found.line == line_of(HERE, "# before backward")
    assert found.message.startswith("gradients are clipped before backward() computes them")


@pytest.mark.parametrize("amp", [False, True], ids=["plain", "amp"])
def test_clipping_after_the_step_says_the_step_used_unclipped_gradients(amp: bool) -> None:
    with observing(Clipping) as observed:
        train_clipping_after_step(amp)
    found = observed.one("TD112")
    assert found.line == line_of(HERE, "# after the step")
    assert "after the optimizer step has applied them" in found.message and "before backward()" not in found.message


def test_clipping_after_the_step_changes_nothing_the_step_applied() -> None:
    """What the message rests on (torch 2.13): the weights come out bit-identical to no clip."""
    def weights(clip: bool) -> torch.Tensor:
        torch.manual_seed(0)
        model = nn.Linear(4, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        for _ in range(3):
            optimizer.zero_grad()
            model(torch.randn(8, 4) * 10).pow(2).mean().backward()
            optimizer.step()
            if clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        return model.weight.detach().clone()
    assert torch.equal(weights(clip=True), weights(clip=False))


def test_clipping_after_backward_is_not_flagged() -> None:
    with observing(Clipping) as observed:
        train("backward-first")
        train("unscale-first", amp=True)
    assert observed.codes == set()


def test_clipping_scaled_gradients_is_flagged() -> None:
    with observing(Clipping) as observed:
        train("backward-first", amp=True)
    assert observed.one("TD113").line == line_of(HERE, "torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)")


def test_gradients_are_scaled_on_the_cpu_until_unscaled() -> None:
    """What TD113 rests on: the clip sees gradients multiplied by the scale (65536)."""
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(model(torch.randn(8, 4)).pow(2).mean()).backward()
    scaled = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
    scaler.unscale_(optimizer)
    true = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
    assert scaler.get_scale() == 65536.0
    assert torch.isclose(scaled / true, torch.tensor(65536.0))


def test_generators_of_parameters_still_reach_the_clip() -> None:
    """The stand-in reads `model.parameters()` once and hands the same tensors on."""
    model = nn.Linear(4, 2)
    model(torch.randn(3, 4)).sum().backward()
    expected = torch.nn.utils.clip_grad_norm_(list(model.parameters()), float("inf"))
    with observing(Clipping):
        got = torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
    assert torch.equal(expected, got)


def test_measuring_the_norm_with_an_infinite_limit_is_not_clipping() -> None:
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with observing(Clipping) as observed:
        for _ in range(3):
            optimizer.zero_grad()
            model(torch.randn(8, 4)).pow(2).mean().backward()
            optimizer.step()
            torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))  # logs the norm after the step
    assert observed.codes == set()
