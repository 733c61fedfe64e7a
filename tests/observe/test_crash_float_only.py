"""TD220: a bool or integer tensor given to `mean()`, `std()` or `-`, which need numbers."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from tests.run.test_crash import explained, line_of


def test_an_accuracy_averaged_as_bools_names_the_comparison_that_made_them() -> None:
    def accuracy() -> None:
        logits, labels = torch.randn(8, 3), torch.randint(0, 3, (8,))
        correct = logits.argmax(dim=1) == labels
        correct.mean()

    finding = explained(accuracy)
    assert finding.rule == "TD220" and finding.line == line_of("correct.mean()", accuracy)
    assert "`correct` is a tensor of bool (made by `logits.argmax(dim=1) == labels`" in finding.message
    assert "`correct.float().mean()`" in finding.hint


def test_a_comparison_averaged_on_the_line_itself_is_named() -> None:
    def accuracy() -> None:
        pred, labels = torch.randint(0, 3, (8,)), torch.randint(0, 3, (8,))
        torch.mean(pred == labels)

    finding = explained(accuracy)
    assert finding.rule == "TD220" and "`pred == labels` is a tensor of bool" in finding.message


def test_the_spread_of_integer_labels_names_their_dtype() -> None:
    def spread() -> None:
        labels = torch.tensor([0, 1, 2, 1])
        print(labels.float().mean(), labels.std())

    finding = explained(spread)
    assert finding.rule == "TD220" and "`labels` is a tensor of int64" in finding.message and "`std()`" in finding.message


def test_one_minus_a_bool_done_flag_is_told_to_invert_or_cast() -> None:
    batch = SimpleNamespace(done=torch.tensor([True, False]), reward=torch.ones(2))

    def target() -> None:
        print(batch.reward + 0.99 * (1 - batch.done))

    finding = explained(target)
    assert finding.rule == "TD220" and finding.line == line_of("(1 - batch.done)", target)
    assert "`batch.done` is a bool tensor" in finding.message
    assert "`~batch.done`" in finding.hint and "`1 - batch.done.float()`" in finding.hint


def test_the_negation_of_a_mask_names_the_line_that_made_it() -> None:
    def negate() -> None:
        scores = torch.randn(4)
        mask = scores > 0
        print(-mask)

    finding = explained(negate)
    assert finding.rule == "TD220" and "made by `scores > 0` at line" in finding.message


def test_floating_point_operands_on_the_line_leave_the_crash_generic() -> None:
    def unrelated() -> None:
        x = torch.randn(3)
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long " + str(x.mean()))

    assert explained(unrelated).rule == "TD001"
