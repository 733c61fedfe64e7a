"""TD579: the user's own `assert` (or `raise` under an `if`) explained by the values its test read."""

from __future__ import annotations

import torch

from tests.run.test_crash import explained, line_of


def test_a_failed_assert_shows_the_values_it_compared() -> None:
    def build() -> None:
        filter_length, win_length = 800, 1024
        assert filter_length >= win_length

    finding = explained(build)
    assert finding.rule == "TD579" and finding.line == line_of("assert filter_length >= win_length", build)
    assert finding.message == "the assertion `filter_length >= win_length` is false here: `filter_length` = 800, `win_length` = 1024"


def test_a_raise_under_an_if_shows_the_shapes_of_the_tensors() -> None:
    def loss(hidden: torch.Tensor, target: torch.Tensor) -> None:
        if hidden.size(0) != target.size(0):
            raise RuntimeError("Input and target should have the same size in the batch dimension.")

    finding = explained(lambda: loss(torch.zeros(0, 4), torch.zeros(12)))
    assert finding.rule == "TD579" and finding.line == line_of("raise RuntimeError", loss)
    assert "the check `hidden.size(0) != target.size(0)` raised RuntimeError here" in finding.message
    assert "`hidden` = a tensor of shape [0, 4], `target` = a tensor of shape [12]" in finding.message


def test_an_assertion_raised_inside_a_library_is_not_the_users_check() -> None:
    def step() -> None:
        torch.testing.assert_close(torch.zeros(2), torch.ones(2))

    assert explained(step).rule != "TD579"
