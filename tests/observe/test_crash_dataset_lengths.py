"""TD362: a `TensorDataset` of tensors with different numbers of rows."""

from __future__ import annotations

import torch
from torch.utils.data import TensorDataset

from tests.run.test_crash import explained, line_of


def test_labels_of_another_length_are_named_with_their_shapes() -> None:
    def build() -> None:
        features, labels = torch.randn(100, 8), torch.randint(0, 2, (120,))
        TensorDataset(features, labels)

    finding = explained(build)
    assert finding.rule == "TD362" and finding.line == line_of("TensorDataset(features, labels)", build)
    assert finding.message.endswith("`features` has 100 ([100, 8]), `labels` has 120 ([120])")


def test_arguments_that_are_expressions_are_numbered() -> None:
    def build() -> None:
        features = torch.randn(8, 100)
        TensorDataset(features, torch.zeros(100))

    finding = explained(build)
    assert finding.rule == "TD362" and "`features` has 8 ([8, 100]), tensor 1 has 100 ([100])" in finding.message
