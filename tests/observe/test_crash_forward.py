"""TD572: a module class whose `forward` is misspelt or indented inside another method."""

from __future__ import annotations

import torch
from torch import nn

from tests.run.test_crash import explained, line_of


class Misspelt(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def foward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class Nested(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

        def forward(self: nn.Module, x: torch.Tensor) -> torch.Tensor:
            return x


class Unrelated(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def test_a_misspelt_forward_is_named_with_its_line() -> None:
    def call() -> None:
        Misspelt()(torch.randn(3, 4))

    finding = explained(call)
    assert finding.rule == "TD572" and finding.line == line_of("Misspelt()(torch.randn(3, 4))", call)
    assert f"it defines `foward` (line {line_of('def foward', Misspelt)})" in finding.message
    assert finding.hint.startswith("Rename `foward` to `forward`")


def test_a_forward_indented_inside_init_is_named() -> None:
    finding = explained(lambda: Nested()(torch.randn(3, 4)))
    assert finding.rule == "TD572" and "indented inside `__init__`" in finding.message


def test_a_class_with_no_method_like_forward_stays_the_generic_crash() -> None:
    assert explained(lambda: Unrelated()(torch.randn(3, 4))).rule == "TD001"
