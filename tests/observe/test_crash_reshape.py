"""TD571: a `view`/`reshape` asked for a shape that does not hold the tensor's values."""

from __future__ import annotations

import torch
from torch import nn

from tests.run.test_crash import explained, line_of


class Flattening(nn.Module):
    """Written for 28-pixel images, given 32-pixel ones."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 20, 5)
        self.fc = nn.Linear(20 * 12 * 12, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.max_pool2d(self.conv(x), 2)
        x = x.view(-1, 20 * 12 * 12)
        return self.fc(x)


def test_a_flatten_written_for_another_input_size_is_td417s_with_the_size_per_sample() -> None:
    finding = explained(lambda: Flattening()(torch.randn(8, 1, 32, 32)))
    assert finding.rule == "TD417" and finding.line == line_of("x = x.view(-1, 20 * 12 * 12)", Flattening.forward)
    assert "`x` has shape [8, 20, 14, 14], 3920 per sample" in finding.message and "in_features=3920" in finding.hint


def test_a_fixed_shape_names_both_sizes() -> None:
    def reshape() -> None:
        steps = torch.arange(6)
        steps.reshape(4, 2)

    finding = explained(reshape)
    assert finding.rule == "TD571" and finding.line == line_of("steps.reshape(4, 2)", reshape)
    assert finding.message == "`steps.reshape(4, 2)` asks for shape [4, 2], which holds 8 values, but `steps` has shape [6]: 6 values"


def test_torch_reshape_with_an_inferred_dimension_that_cannot_divide() -> None:
    def reshape() -> None:
        grid = torch.randn(2, 3, 5)
        torch.reshape(grid, (4, -1, 2))

    finding = explained(reshape)
    assert finding.rule == "TD571" and "its given dimensions hold 8 values, which do not divide the 30 values of `grid`" in finding.message


def test_a_reshape_of_an_expression_stays_the_generic_crash() -> None:
    def reshape() -> None:
        (torch.randn(6) * 2).view(4, 2)

    assert explained(reshape).rule == "TD001"
