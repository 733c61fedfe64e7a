"""TD573: `topk` asked for more values than the dimension holds."""

from __future__ import annotations

import torch

from tests.run.test_crash import explained, line_of


def accuracy(output: torch.Tensor, target: torch.Tensor, topk: tuple[int, ...] = (1,)) -> list[float]:
    """The top-k accuracy helper of the ImageNet examples."""
    maxk = max(topk)
    _, pred = output.topk(maxk, 1, True, True)
    correct = pred.t().eq(target.view(1, -1).expand_as(pred.t()))
    return [correct[:k].reshape(-1).float().sum().item() for k in topk]


def test_a_top5_accuracy_of_a_three_class_model_names_k_and_the_classes() -> None:
    finding = explained(lambda: accuracy(torch.randn(16, 3), torch.randint(0, 3, (16,)), topk=(1, 5)))
    assert finding.rule == "TD573" and finding.line == line_of("output.topk(maxk, 1, True, True)", accuracy)
    assert finding.message == "`output.topk(maxk, 1, True, True)` asks for the 5 largest values along dimension 1 of `output` (shape [16, 3]), which has only 3"


def test_torch_topk_with_the_default_dimension() -> None:
    def best() -> None:
        scores = torch.randn(4)
        torch.topk(scores, 10)

    finding = explained(best)
    assert finding.rule == "TD573" and "along dimension -1 of `scores` (shape [4]), which has only 4" in finding.message


def test_a_topk_of_an_expression_stays_the_generic_crash() -> None:
    def best() -> None:
        (torch.randn(4) * 2).topk(10)

    assert explained(best).rule == "TD001"
