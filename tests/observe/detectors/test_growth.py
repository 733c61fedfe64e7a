"""Numbers going wrong before NaN (TD490-TD493), both sides: the correct programs of mixed
precision, legitimately large first gradients and clean compiled models get no warning."""

from __future__ import annotations

import re
from collections.abc import Callable

import torch
from torch import nn

import torchdoctor
from torchdoctor.core.finding import Severity


def run(train: Callable[[], object]) -> list[torchdoctor.Finding]:
    torch.manual_seed(0)
    with torchdoctor.watch() as watched:
        train()
    return watched.findings


def regression(lr: float, steps: int = 60) -> Callable[[], None]:
    def train() -> None:
        model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        x = torch.randn(256, 8) * 4
        y = x.sum(dim=1, keepdim=True) ** 2
        for _ in range(steps):
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()

    return train


def test_exploding_gradients_are_caught_before_the_nan_with_where_they_start() -> None:
    found = {f.rule: f for f in run(regression(lr=0.3))}
    assert "TD490" in found
    ratio = re.search(r"\(x([0-9.e+]+)\)", found["TD490"].message)
    assert ratio is not None and float(ratio.group(1)) >= 1e3
    assert "starts in `" in found["TD490"].message  # a parameter is named
    steps = found["TD490"].evidence["norms"]
    assert all(n == n and n != float("inf") for n in steps)  # reported while still finite


def test_large_first_gradients_that_settle_are_not_exploding() -> None:
    """A badly scaled target gives huge gradients at first; a sane learning rate brings them down."""

    def train() -> None:
        model = nn.Linear(8, 1)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
        x = torch.randn(128, 8)
        y = x @ torch.full((8, 1), 300.0)
        for _ in range(80):
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()

    assert {f.rule for f in run(train)} & {"TD490", "TD491", "TD145"} == set()


def test_mixed_precision_with_grad_scaler_and_autocast_is_silent() -> None:
    def train() -> None:
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        scaler = torch.amp.GradScaler("cpu")
        x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
        for _ in range(30):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = nn.functional.cross_entropy(model(x), y)  # autocast computes it in float32
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()

    found = run(train)
    assert [f for f in found if f.severity is not Severity.INFO] == []
    assert "TD493" not in {f.rule for f in found}


def test_weights_that_collapse_and_weights_that_stay_are_told_apart() -> None:
    def train(decay: float) -> Callable[[], None]:
        def loop() -> None:
            model = nn.Linear(16, 4)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=decay)
            x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
            for _ in range(80):
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()

        return loop

    collapsed = [f for f in run(train(9.0)) if f.rule == "TD491"]
    assert collapsed and "collapse towards zero" in collapsed[0].message
    assert "TD491" not in {f.rule for f in run(train(1e-2))}
