"""TD240: gradients asked of an integer tensor, named with the line that made it."""

from __future__ import annotations

import torch
from torch import nn

from tests.run.test_crash import explained, line_of


def test_requires_grad_set_on_an_integer_tensor_names_it_and_its_maker() -> None:
    def make() -> None:
        weights = torch.arange(10)
        weights.requires_grad = True

    finding = explained(make)
    assert finding.rule == "TD240" and finding.line == line_of("weights.requires_grad = True", make)
    assert "`weights` is a tensor of int64 (made by `torch.arange(10)` at line" in finding.message
    assert "dtype=torch.float32" in finding.hint


def test_requires_grad_underscore_and_parameter_of_integers() -> None:
    def inplace() -> None:
        counts = torch.ones(3, dtype=torch.int32)
        counts.requires_grad_()

    def parameter() -> None:
        labels = torch.tensor([0, 1, 2])
        nn.Parameter(labels)

    assert "`counts` is a tensor of int32 (made by" in explained(inplace).message
    assert explained(parameter).rule == "TD240"


def test_a_factory_given_whole_numbers_and_requires_grad() -> None:
    def make() -> None:
        torch.tensor([[1, 2], [3, 4]], requires_grad=True)

    finding = explained(make)
    assert finding.rule == "TD240" and "`torch.tensor([[1, 2], [3, 4]], requires_grad=True)` makes a tensor of integers" in finding.message


def test_a_float_tensor_with_requires_grad_raises_nothing_and_a_bool_one_is_told() -> None:
    weights = torch.arange(10.0)
    weights.requires_grad = True  # the correct twin: floats
    assert weights.requires_grad

    def flags() -> None:
        mask = torch.zeros(3) > 0
        mask.requires_grad_()

    assert explained(flags).message.startswith("`mask` is a tensor of bool, and autograd")
