"""The helpers the silent-bug detectors share."""

from __future__ import annotations

import torch
from torch import nn

from tests.observe.detectors.conftest import line_of
from torchdoctor.observe.support import due, first_tensor, listing, source_call, unwrapped

HERE = __file__


def test_due_checks_the_first_steps_then_every_sixteenth() -> None:
    assert [s for s in range(1, 50) if due(s)] == [1, 2, 3, 4, 16, 32, 48]


def test_unwrapped_sees_through_wrappers_only() -> None:
    model = nn.Linear(2, 2)
    assert unwrapped(nn.DataParallel(model)) is model
    assert unwrapped(model) is model

    class Holder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.module = model  # a user's attribute that happens to be called `module`

    holder = Holder()
    assert unwrapped(holder) is holder


def test_first_tensor_looks_into_containers() -> None:
    a, b = torch.zeros(1), torch.ones(1)
    assert first_tensor({"logits": a, "aux": b}) is a
    assert first_tensor((None, [b])) is b
    assert first_tensor("text") is None


def test_listing_shortens_long_lists() -> None:
    assert listing(["a"]) == "`a`"
    assert listing(["a", "b", "c", "d", "e"]) == "`a`, `b`, `c` and 2 more"


def test_source_call_reads_the_call_from_the_line() -> None:
    text = "torch.nn.functional.dropout(torch.zeros(3), p=(0.5))"  # a call with nested brackets
    line = line_of(HERE, "# a call with nested brackets")
    assert source_call((HERE, line), r"[\w.]*dropout") == "torch.nn.functional.dropout(torch.zeros(3), p=(0.5))"
    assert source_call((HERE, line), r"\bsoftmax") is None
    assert text
