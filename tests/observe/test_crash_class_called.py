"""TD562 for losses: `criterion = nn.CrossEntropyLoss` (no parentheses), then `criterion(out, y)`."""

from __future__ import annotations

import torch
from torch import nn

from tests.run.test_crash import explained, line_of


def test_a_loss_class_called_on_the_output_and_the_target() -> None:
    def step() -> None:
        criterion = nn.CrossEntropyLoss
        loss = criterion(torch.randn(4, 3), torch.randint(0, 3, (4,)))
        print(loss)

    finding = explained(step)
    assert finding.rule == "TD562" and finding.line == line_of("criterion = nn.CrossEntropyLoss", step)
    assert finding.message.startswith("`criterion` is the class `CrossEntropyLoss`, not a loss")
    assert "`criterion = CrossEntropyLoss()`" in finding.hint


def test_a_crash_inside_an_init_called_properly_is_not_this() -> None:
    class Broken(nn.Module):
        def __init__(self, size: int) -> None:
            super().__init__()
            raise ValueError(f"no layer of size {size}")

    assert explained(lambda: Broken(3)).rule == "TD001"
