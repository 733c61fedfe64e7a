"""TD570: a dimension asked of a variable that has fewer."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tests.run.test_crash import explained, line_of


def test_torch_max_over_dimension_1_of_a_single_sample() -> None:
    def predict() -> None:
        logits = torch.randn(3)
        _, predicted = torch.max(logits, 1)

    finding = explained(predict)
    assert finding.rule == "TD570" and finding.line == line_of("torch.max(logits, 1)", predict)
    assert finding.message == "`torch.max(logits, 1)` asks for dimension 1 of `logits`, which has shape [3]: 1 dimension(s), so dimensions -1 to 0"


def test_a_method_and_a_keyword() -> None:
    def methods() -> None:
        scores = torch.randn(5)
        print(scores.softmax(dim=1))

    def functional() -> None:
        scores = torch.randn(2, 5)
        print(F.log_softmax(scores, dim=2))

    assert "`scores.softmax(dim=1)` asks for dimension 1 of `scores`" in explained(methods).message
    assert "of `scores`, which has shape [2, 5]" in explained(functional).message


def test_a_tensor_that_is_not_a_variable_stays_the_generic_crash() -> None:
    def inline() -> None:
        print(torch.randn(3).sum(1))

    assert explained(inline).rule == "TD001"
