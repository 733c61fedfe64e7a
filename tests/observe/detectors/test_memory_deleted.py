"""TD441: "I deleted it but memory did not come back", both sides."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.observe.detectors.conftest import line_of, observing
from torchdoctor.observe.detectors.memory_account import MemoryAccount
from torchdoctor.observe.detectors.memory_deleted import DeletedButAlive, _holder, deleted_names
from torchdoctor.observe.memory.census import Big
from torchdoctor.rules.memory.deleted_but_still_alive import RULE as DELETED

HERE = __file__
ROWS = 512  # x 1024 floats: 2 MiB per tensor


def findings(run) -> list:  # type: ignore[no-untyped-def]
    with observing(MemoryAccount, DeletedButAlive) as observed:
        run()
    return [f for f in observed.findings if f.rule == "TD441"]


def another_first(rows: torch.Tensor) -> torch.Tensor:
    """A `first` view in another function: not the variable a census finds in view_kept_after_del."""
    first = rows[:1]
    return first


def view_kept_after_del(clone: bool) -> None:
    model = nn.Linear(1024, 10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(6):
        features = torch.randn(ROWS, 1024)
        first = features[:8].clone() if clone else features[:8]
        del features
        optimizer.zero_grad()
        model(first).pow(2).mean().backward()
        optimizer.step()


def test_a_view_kept_after_its_base_was_deleted_is_explained() -> None:
    [finding] = findings(lambda: view_kept_after_del(clone=False))
    assert (finding.file, finding.line) == (HERE, line_of(HERE, "first = features[:8].clone() if clone else features[:8]"))
    assert "`first` is a view of 32.0 KiB that keeps the whole 2.0 MiB storage of `features` alive" in finding.message
    assert f"`del features` at line {line_of(HERE, '        del features')}" in finding.message
    assert ".clone()" in finding.hint


def test_a_copy_lets_the_base_go() -> None:
    assert findings(lambda: view_kept_after_del(clone=True)) == []


def kept_in_a_list_then_deleted(keep: bool) -> None:
    model = nn.Linear(1024, 10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    seen = []
    for _ in range(6):
        batch = torch.randn(ROWS, 1024)
        optimizer.zero_grad()
        loss = model(batch).pow(2).mean()
        loss.backward()
        optimizer.step()
        if keep:
            seen.append(batch)
        del batch  # "free the batch before the next one"


def test_a_deleted_name_whose_tensor_a_list_keeps_is_explained_at_the_del() -> None:
    [finding] = findings(lambda: kept_in_a_list_then_deleted(keep=True))
    assert finding.line == line_of(HERE, 'del batch  # "free the batch')
    assert finding.message.startswith("`del batch` does not give its 2.0 MiB back: `seen[")
    assert "still holds it" in finding.message


def test_a_deleted_name_nothing_else_keeps_is_fine() -> None:
    assert findings(lambda: kept_in_a_list_then_deleted(keep=False)) == []


def parameters_are_not_freed_by_del() -> None:
    model = nn.Linear(1024, 512)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(6):
        weight = model.weight  # 2 MiB, held by the model
        optimizer.zero_grad()
        model(torch.randn(4, 1024)).sum().backward()
        optimizer.step()
        del weight


def test_a_deleted_name_of_a_parameter_is_not_reported() -> None:
    assert findings(parameters_are_not_freed_by_del) == []


def test_deleted_names_and_view_sites_come_from_the_source() -> None:
    assert deleted_names(view_kept_after_del.__code__) == {"features": line_of(HERE, "        del features")}
    assert deleted_names(kept_in_a_list_then_deleted.__code__) == {"batch": line_of(HERE, 'del batch  # "free')}


@pytest.mark.parametrize("big, others, said", [
    (None, [("first", 1024)], "`first` is a view of 1.0 KiB of it and keeps the whole storage alive"),
    (None, [("alias", 2**21)], "`alias` still holds it"),
    (Big(2**21, "other", "saved for backward by the graph of `loss`"), [], "it is saved for backward by the graph of `loss`, which"),
    (Big(2**21, "other", "`history[3]`"), [], "`history[3]` still holds it"),
    (Big(2**21, "other", "a tensor"), [], "torchdoctor cannot name"),
], ids=["view", "other-name", "graph", "named", "unnamed"])
def test_each_holder_fills_its_variant(big: Big | None, others: list[tuple[str, int]], said: str) -> None:
    variant, fields = _holder(big, others, 2**21)
    finding = DELETED.finding(fields={"name": "batch", "size": "2.0 MiB"} | fields, variant=variant)
    assert finding.message.startswith("`del batch` does not give its 2.0 MiB back: ") and said in finding.message
