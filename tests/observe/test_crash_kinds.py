"""Crashes real beginner programs hit, explained with their cause (issue 28 §2): an optimizer
given an empty parameter list, and why it is empty."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.run.test_crash import explained, line_of

# --- "optimizer got an empty parameter list" ------------------------------------------------------


class ListNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = [nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class DictNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.heads = {"a": nn.Linear(4, 2), "b": nn.Linear(4, 2)}


def test_layers_in_a_plain_list_point_at_the_list() -> None:
    def build() -> None:
        model = ListNet()
        torch.optim.SGD(model.parameters(), lr=0.1)

    finding = explained(build)
    assert finding.rule == "TD122" and finding.line == line_of("self.layers = [", ListNet)
    assert finding.message.startswith("2 `Linear` modules stored in a plain list in `self.layers` are not registered, "
                                      "so `model.parameters()` is empty and `SGD` got an empty parameter list, crashes at ")
    assert "nn.ModuleList" in finding.hint


def test_layers_in_a_plain_dict_of_a_trainer_attribute() -> None:
    class Trainer:
        def __init__(self) -> None:
            self.net = DictNet()
            self.optimizer = torch.optim.Adam(self.net.parameters())

    finding = explained(Trainer)
    assert finding.rule == "TD122" and finding.line == line_of("self.heads = {", DictNet)
    assert "in a plain dict in `self.heads`" in finding.message and "`self.net.parameters()` is empty" in finding.message


def test_every_parameter_frozen_behind_a_requires_grad_filter() -> None:
    def build() -> None:
        model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 2))
        for p in model.parameters():
            p.requires_grad = False
        torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-3)

    finding = explained(build)
    assert finding.rule == "TD315" and finding.line == line_of("torch.optim.Adam(", build)
    assert finding.message == ("all 4 parameter tensors of `model` have requires_grad=False, so `Adam` got an empty parameter list "
                               "from `filter(lambda p: p.requires_grad, model.parameters())`")


def test_a_parameters_generator_used_up_before_the_optimizer_points_at_it() -> None:
    def build() -> None:
        model = nn.Linear(4, 2)
        params = model.parameters()
        print(sum(p.numel() for p in params))
        torch.optim.SGD(params, lr=0.1)

    finding = explained(build)
    assert finding.rule == "TD180" and finding.line == line_of("params = model.parameters()", build)
    first = line_of("print(sum(", build)
    assert finding.message.startswith(f"`params` is a one-shot iterator (`model.parameters()`): line {first} uses it up, "
                                      "so `SGD` got an empty parameter list, crashes at ")
    assert finding.hint == "Keep a list where it is made: `params = list(model.parameters())`."


def test_a_model_without_any_parameter() -> None:
    def build() -> None:
        model = nn.Sequential(nn.ReLU(), nn.Flatten())
        torch.optim.SGD(model.parameters(), lr=0.1)

    finding = explained(build)
    assert finding.rule == "TD315" and "`model` (Sequential) has no registered parameters" in finding.message


@pytest.mark.parametrize("case", ["empty-list", "partly-frozen-list"])
def test_an_empty_list_the_source_cannot_tie_to_a_model_stays_the_plain_crash(case: str) -> None:
    """Nothing ties the empty list to a model that explains it: the plain crash (TD001)."""
    def build() -> None:
        model = nn.Linear(4, 2)
        params = [] if case == "empty-list" else [p for p in model.parameters() if p.requires_grad and p.dim() > 5]
        torch.optim.SGD(params, lr=0.1)

    finding = explained(build)
    assert finding.rule == "TD001"


def test_a_model_with_registered_layers_builds_its_optimizer() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 2))
    params = list(model.parameters())
    print(sum(p.numel() for p in params))
    torch.optim.SGD(params, lr=0.1)
