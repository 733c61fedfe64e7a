"""TD569: a condition that is a tensor of several values."""

from __future__ import annotations

import torch

from tests.run.test_crash import explained, line_of


def test_an_if_comparing_a_per_sample_tensor() -> None:
    def check() -> None:
        accuracy = torch.rand(8)
        best = 0.5
        if accuracy > best:
            print("better")

    finding = explained(check)
    assert finding.rule == "TD569" and finding.line == line_of("if accuracy > best:", check)
    assert finding.message == "`accuracy > best` is a tensor of 8 values (`accuracy` has shape [8]), and `if` needs one True or False"


def test_a_while_and_an_and() -> None:
    def loop() -> None:
        losses = torch.ones(3)
        while losses:
            break

    def both() -> None:
        mask, ready = torch.ones(2, 2) > 0, True
        print(ready and mask)  # the last operand is returned, not tested: no crash
        print(mask and ready)

    assert "and `while` needs" in explained(loop).message
    assert "and `and` needs" in explained(both).message


def test_a_condition_on_one_value_is_fine_and_an_unnamed_one_stays_generic() -> None:
    loss = torch.tensor(0.3)
    assert loss < 0.5  # one value: a truth value exists

    def inline() -> None:
        if torch.rand(4) > 0.5:
            print("never")

    assert explained(inline).rule == "TD001"
