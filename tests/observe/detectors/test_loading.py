"""TD427 (a `load_state_dict(..., strict=False)` that loaded nothing), both sides.

The facts it rests on are checked on the installed torch first: a non-strict load of
mismatched keys changes nothing and says so only in what it returns.
"""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

from tests.observe.detectors.conftest import line_of, observing
from torchdoctor.observe.detectors.loading import LoadsMatchingNothing

HERE = __file__


def make() -> nn.Sequential:
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))


class Classifier(nn.Module):
    def __init__(self, classes: int) -> None:
        super().__init__()
        self.backbone = make()
        self.head = nn.Linear(2, classes)


def test_a_non_strict_load_of_prefixed_keys_loads_nothing_and_says_so_only_in_its_result() -> None:
    model, saved = make(), nn.DataParallel(make())
    before = {k: v.clone() for k, v in model.state_dict().items()}
    result = model.load_state_dict(saved.state_dict(), strict=False)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert sorted(result.unexpected_keys) == sorted(saved.state_dict())
    # every key but batch norm's `num_batches_tracked`, which torch fills in when it is absent
    assert sorted(result.missing_keys) == sorted(k for k in model.state_dict() if not k.endswith("num_batches_tracked"))


def test_module_prefixed_checkpoint_is_flagged_at_the_load() -> None:
    model, state = make(), nn.DataParallel(make()).state_dict()
    with observing(LoadsMatchingNothing) as observed:
        model.load_state_dict(state, strict=False)  # DataParallel keys
    finding = observed.one("TD427")
    assert finding.line == line_of(HERE, "# DataParallel keys")
    assert "none of the 8 keys it expects is among the 9 keys given" in finding.message
    assert "`module.` prefix" in finding.message and "DataParallel" in finding.message
    assert 'k.removeprefix("module.")' in finding.hint
    assert finding.severity.value == "error"


@pytest.mark.parametrize(
    ("load", "words"),
    [
        (lambda model, state: model.load_state_dict({"module." + k: v for k, v in state.items()}, False), "`module.` prefix"),
        (lambda model, state: model.load_state_dict({"model." + k: v for k, v in state.items()}, strict=False), "Lightning"),
        (lambda model, state: nn.DataParallel(model).load_state_dict(state, strict=False), "model.module.load_state_dict"),
        (lambda model, state: model.load_state_dict({"state_dict": state, "epoch": 3}, strict=False), 'state["state_dict"]'),
        (lambda model, state: model.load_state_dict({"w": state["0.weight"]}, strict=False), "compare `state.keys()`"),
    ],
    ids=["positional", "lightning", "wrapped-model", "whole-checkpoint", "unrelated"],
)
def test_every_load_that_matches_nothing_is_flagged_with_its_reason(load, words) -> None:  # type: ignore[no-untyped-def]
    model, state = make(), make().state_dict()
    with observing(LoadsMatchingNothing) as observed:
        load(model, state)
    finding = observed.one("TD427")
    assert words in finding.message + finding.hint


def test_loads_that_match_keys_are_not_flagged() -> None:
    backbone = make()
    with observing(LoadsMatchingNothing) as observed:
        model = Classifier(classes=3)
        result = model.load_state_dict({f"backbone.{k}": v for k, v in backbone.state_dict().items()}, strict=False)
        assert result.missing_keys == ["head.weight", "head.bias"]  # a new head: fine-tuning
        model.backbone.load_state_dict(backbone.state_dict(), strict=False)  # the right keys
        model.backbone.load_state_dict(backbone.state_dict())  # strict
        model.backbone.load_state_dict({"0.weight": torch.zeros(8, 4)}, strict=False)  # one tensor on purpose
        model.load_state_dict({}, strict=False)  # nothing given
        nn.ReLU().load_state_dict(backbone.state_dict(), strict=False)  # nothing to load into
        with pytest.raises(RuntimeError, match="Unexpected key"):
            model.backbone.load_state_dict(nn.DataParallel(backbone).state_dict())  # strict raises by itself
    assert observed.codes == set()


def test_a_load_retried_with_the_right_keys_is_not_flagged() -> None:
    model, state = make(), nn.DataParallel(make()).state_dict()
    with observing(LoadsMatchingNothing) as observed:
        missing, unexpected = model.load_state_dict(state, strict=False)
        if len(unexpected) == len(state):
            wrapped = nn.DataParallel(model)
            wrapped.load_state_dict(state)  # into a wrapper around the same model
    assert observed.codes == set()


def test_the_finding_is_made_at_the_next_optimizer_step() -> None:
    model, state = make(), nn.DataParallel(make()).state_dict()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with observing(LoadsMatchingNothing) as observed:
        model.load_state_dict(state, strict=False)
        model(torch.randn(4, 4)).sum().backward()
        assert observed.codes == set()
        optimizer.step()
        assert observed.codes == {"TD427"}


def test_the_observed_load_returns_what_torch_returns_and_changes_nothing_else() -> None:
    source, state = make(), nn.DataParallel(make()).state_dict()
    plain = make().load_state_dict(state, strict=False)
    fresh, loaded = make(), make()
    with observing(LoadsMatchingNothing):
        signature = inspect.signature(source.load_state_dict)
        rng, grad = torch.get_rng_state(), torch.is_grad_enabled()
        observed = fresh.load_state_dict(state, strict=False)
        loaded.load_state_dict(source.state_dict(), strict=False)
        assert torch.equal(torch.get_rng_state(), rng) and torch.is_grad_enabled() == grad
    assert observed == plain and type(observed) is type(plain)
    assert list(signature.parameters) == ["state_dict", "strict", "assign"]
    assert all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(), source.state_dict().values()))
    assert nn.Module.load_state_dict is inspect.unwrap(nn.Module.load_state_dict)  # the stand-in is gone
