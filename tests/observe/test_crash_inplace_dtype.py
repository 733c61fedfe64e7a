"""TD221: an in-place op whose result does not fit the dtype of the tensor it writes into."""

from __future__ import annotations

import torch
from torch import nn

from tests.run.test_crash import explained, line_of


def test_floats_added_into_an_integer_tensor_name_the_line_that_made_it() -> None:
    def accumulate() -> None:
        totals = torch.zeros(3, dtype=torch.long)
        weights = torch.tensor([0.5, 1.5, 2.0])
        totals += weights

    finding = explained(accumulate)
    assert finding.rule == "TD221" and finding.line == line_of("totals += weights", accumulate)
    assert "computes float32 values and writes them into `totals`, a tensor of int64 (made by `torch.zeros(3, dtype=torch.long)`" in finding.message
    assert "`totals = totals + ...`" in finding.hint


def test_an_in_place_method_on_an_attribute_is_named() -> None:
    class Counter(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("seen", torch.arange(4))

        def decay(self) -> None:
            self.seen.mul_(0.9)

    finding = explained(Counter().decay)
    assert finding.rule == "TD221" and "`self.seen.mul_(0.9)` computes float32 values and writes them into `self.seen`, a tensor of int64" in finding.message


def test_a_mask_incremented_in_place_names_bool() -> None:
    def count() -> None:
        mask = torch.tensor([True, False])
        mask += 1

    finding = explained(count)
    assert finding.rule == "TD221" and "computes int64 values and writes them into `mask`, a tensor of bool" in finding.message


def test_a_line_whose_in_place_target_fits_stays_the_generic_crash() -> None:
    def unrelated() -> None:
        x = torch.zeros(3)
        x += 1
        raise RuntimeError("result type Float can't be cast to the desired output type Long")

    assert explained(unrelated).rule == "TD001"
