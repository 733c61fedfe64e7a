"""TD568: the operands of a broadcast or `torch.cat` that disagree, by name and shape."""

from __future__ import annotations

import torch
from torch import nn

from tests.run.test_crash import explained, line_of


def test_the_operands_of_an_arithmetic_operator_by_name_and_shape() -> None:
    def score() -> None:
        features = torch.randn(4, 3)
        weights = torch.randn(4, 5)
        print((features * weights).sum())

    finding = explained(score)
    assert finding.rule == "TD568" and finding.line == line_of("print((features * weights)", score)
    assert finding.message == ("`features` of shape [4, 3] and `weights` of shape [4, 5] cannot be broadcast together: "
                               "3 against 5 in dimension 1 of the result")


def test_an_attribute_of_a_module_and_an_augmented_assignment() -> None:
    class Shift(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bias = nn.Parameter(torch.zeros(5))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x.clone()
            x += self.bias
            return x

    finding = explained(lambda: Shift()(torch.randn(2, 3)))
    assert finding.rule == "TD568" and "`x` of shape [2, 3] and `self.bias` of shape [5]" in finding.message


def test_the_tensor_of_a_cat_that_does_not_match_the_first() -> None:
    def join() -> None:
        left, right = torch.randn(4, 3), torch.randn(5, 2)
        torch.cat([left, right], dim=1)

    finding = explained(join)
    assert finding.rule == "TD568" and "`left` is [4, 3], `right` is [5, 2]" in finding.message


def test_a_vector_joined_to_a_table_names_both_shapes() -> None:
    def join() -> None:
        features, ages = torch.randn(4, 3), torch.randn(4)
        torch.cat([features, ages], dim=1)

    finding = explained(join)
    assert finding.rule == "TD568" and finding.line == line_of("torch.cat([features, ages]", join)
    assert "joins tensors of different numbers of dimensions: `features` is [4, 3], `ages` is [4]" in finding.message
    assert ".unsqueeze(1)" in finding.hint


def test_a_mask_that_does_not_broadcast_against_the_tensor_it_fills() -> None:
    def fill() -> None:
        scores, padding = torch.randn(4, 3), torch.tensor([True, False, False, True])
        scores.masked_fill(padding, float("-inf"))

    finding = explained(fill)
    assert finding.rule == "TD568" and "`scores` of shape [4, 3] and `padding` of shape [4]" in finding.message


def test_an_elementwise_product_of_matrices_that_fit_a_matrix_product() -> None:
    def project() -> None:
        features, weights = torch.randn(3, 4), torch.randn(4, 5)
        print(features * weights)

    finding = explained(project)
    assert finding.rule == "TD568" and "they fit a matrix product" in finding.message
    assert "`features @ weights`" in finding.hint


def test_operands_that_are_not_variables_stay_the_generic_crash() -> None:
    def inline() -> None:
        print(torch.randn(4, 3) + torch.randn(4, 5))

    assert explained(inline).rule == "TD001"


def test_an_augmented_add_meant_as_an_append_with_the_other_side_a_call() -> None:
    def pad() -> torch.Tensor:
        indices = torch.arange(903)
        padding = 1
        indices += torch.cat([indices, indices[:padding]], dim=0)
        return indices

    finding = explained(pad)
    assert finding.rule == "TD568" and finding.line == line_of("indices += torch.cat", pad)
    assert "`indices` has 903 values but `torch.cat([indices, indices[:padding]], dim=0)` has 904" in finding.message
    assert "`torch.cat(...)` and assign the result" in finding.hint


def test_one_readable_operand_of_another_size_than_the_message_says_stays_the_generic_crash() -> None:
    def step() -> torch.Tensor:
        table = torch.zeros(4, 3)
        return table + torch.zeros(5, 3)

    assert explained(step).rule == "TD001"  # 2-D: which dimension of which side is not said plainly enough
