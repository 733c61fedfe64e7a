"""TD576 and TD577: one of the user's modules misused: an attribute it lacks, explained from its class
(created only under a condition of `__init__`, only by another method, or misspelt); indexed as a list."""

from __future__ import annotations

import torch
from torch import nn

from tests.run.test_crash import explained, line_of


class Adapter(nn.Module):
    def __init__(self, features: int, rank: int) -> None:
        super().__init__()
        self.base = nn.Linear(features, features)
        if rank > 0:
            self.down = nn.Linear(features, rank)
            self.up = nn.Linear(rank, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.up(self.down(x))


class Either(nn.Module):
    def __init__(self, wide: bool) -> None:
        super().__init__()
        if wide:
            self.head = nn.Linear(8, 4)
        else:
            self.head = nn.Linear(8, 2)
        self.classifier = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifer(self.head(x))


class Cached(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def build_cache(self) -> None:
        self.cache = torch.zeros(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) + self.cache


def test_a_layer_created_only_under_a_condition_of_init() -> None:
    adapter = Adapter(8, rank=0)
    finding = explained(lambda: adapter(torch.randn(2, 8)))
    assert finding.rule == "TD576" and finding.line == line_of("return self.base(x) + self.up", Adapter.forward)
    assert "`self` (a `Adapter`) has no `up`" in finding.message and "only when `rank > 0`" in finding.message


def test_an_attribute_only_another_method_creates() -> None:
    model = Cached()
    finding = explained(lambda: model(torch.randn(2, 4)))
    assert finding.rule == "TD576" and "only its method `build_cache` creates it" in finding.message


def test_a_misspelt_layer_name_gets_the_one_the_module_has() -> None:
    model = Either(wide=True)
    finding = explained(lambda: model(torch.randn(2, 8)))
    assert finding.rule == "TD576" and "it has `classifier`" in finding.message


def test_an_attribute_never_created_and_with_no_close_name_stays_the_generic_crash() -> None:
    class Branches(Either):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.tail(self.head(x))

    model = Branches(wide=False)
    assert explained(lambda: model(torch.randn(2, 8))).rule == "TD001"


class Losses(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1 = nn.L1Loss()
        self.per_scale = nn.ModuleList([nn.L1Loss() for _ in range(2)])

    def forward(self, outputs: list[torch.Tensor], targets: list[torch.Tensor]) -> torch.Tensor:
        return torch.stack([self.l1[i](outputs[i], targets[i]) for i in range(2)]).mean()


def test_one_module_indexed_as_if_it_held_several() -> None:
    losses = Losses()
    finding = explained(lambda: losses([torch.zeros(2)] * 2, [torch.ones(2)] * 2))
    assert finding.rule == "TD577" and finding.line == line_of("self.l1[i](outputs[i]", Losses.forward)
    assert "`self.l1` is one `L1Loss` module, not a list of them: `self.l1[i]` indexes it" in finding.message


def test_an_indexed_module_list_is_fine_and_another_object_stays_the_generic_crash() -> None:
    losses = Losses()
    assert float(losses.per_scale[1](torch.zeros(2), torch.ones(2))) == 1.0
    count = 3
    assert explained(lambda: count[0]).rule == "TD001"  # type: ignore[index]
