"""TD179 at run time: `loss.data[0]` on a 0-dim tensor."""

from __future__ import annotations

import torch
from torch import nn

from tests.run.test_crash import explained, line_of


def test_a_loss_indexed_as_in_torch_0_3_is_told_to_use_item() -> None:
    def step() -> None:
        loss = nn.MSELoss()(torch.randn(4, 1), torch.randn(4, 1))
        print(loss.data[0])

    finding = explained(step)
    assert finding.rule == "TD179" and finding.line == line_of("print(loss.data[0])", step)
    assert "`loss.data` holds one value, of shape []" in finding.message and finding.hint == "Read the number with `loss.item()`."


def test_an_index_of_a_tensor_with_values_stays_the_generic_crash() -> None:
    def step() -> None:
        values = torch.randn(3)
        print(values[0])
        raise IndexError("invalid index of a 0-dim tensor")

    assert explained(step).rule == "TD001"
