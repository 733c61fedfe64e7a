"""A torch.compile'd model: run finds the bugs it finds in eager code, at the same lines, and
changes nothing of what dynamo does (same graphs, no recompilation, no warning)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchdoctor

#: (the layer that ends the model, the loss) -> the rule: the loss-input family (TD101 ...)
WRONG_INPUTS = [
    (lambda x: torch.softmax(x, dim=1), lambda out, y: F.cross_entropy(out, y), "TD101"),
    (lambda x: torch.sigmoid(x), lambda out, y: F.binary_cross_entropy_with_logits(out, F.one_hot(y, 4).float()), "TD102"),
    (lambda x: F.softmax(x, dim=1), lambda out, y: F.nll_loss(out, y), "TD103"),
    (lambda x: torch.sigmoid(x), lambda out, y: F.cross_entropy(out, y), "TD119"),
]


class Net(nn.Module):
    def __init__(self, last: Callable[[torch.Tensor], torch.Tensor] | None = None, cut: bool = False) -> None:
        super().__init__()
        self.body, self.head = nn.Linear(8, 16), nn.Linear(16, 4)
        self.last, self.cut = last, cut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.body(x))
        if self.cut:
            h = h.detach()  # the graph cut
        out = self.head(h)
        return self.last(out) if self.last is not None else out  # the last layer


def findings(model: nn.Module, loss_of: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], compiled: bool) -> list[torchdoctor.Finding]:
    torch.manual_seed(0)
    x, y = torch.randn(32, 8), torch.randint(0, 4, (32,))
    with torchdoctor.watch() as watched:
        run = torch.compile(model, backend="aot_eager") if compiled else model
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(6):
            optimizer.zero_grad()
            loss_of(run(x), y).backward()
            optimizer.step()
    return [f for f in watched.findings if f.rule != "TD483"]  # the compile cost: said of every compiled run


@pytest.mark.parametrize("last, loss_of, rule", WRONG_INPUTS, ids=[case[2] for case in WRONG_INPUTS])
def test_a_wrong_loss_input_is_found_through_compile_at_the_same_line(last, loss_of, rule) -> None:  # type: ignore[no-untyped-def]
    eager = [(f.rule, f.line) for f in findings(Net(last), loss_of, compiled=False)]
    compiled = [(f.rule, f.line) for f in findings(Net(last), loss_of, compiled=True)]
    assert rule in {code for code, _ in eager}
    assert compiled == eager


def test_a_graph_cut_is_found_through_compile_at_the_same_line() -> None:
    eager = [(f.rule, f.line) for f in findings(Net(cut=True), F.cross_entropy, compiled=False)]
    compiled = [(f.rule, f.line) for f in findings(Net(cut=True), F.cross_entropy, compiled=True)]
    assert [rule for rule, _ in eager] == ["TD120"] and compiled == eager


def test_a_correct_compiled_model_gets_nothing_and_dynamo_sees_no_difference() -> None:
    from torch._dynamo.utils import counters

    def compiled_run(observed: bool) -> tuple[dict[str, int], list[str], dict[str, torch.Tensor]]:
        torch._dynamo.reset()
        counters.clear()
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 4))
        with warnings.catch_warnings(record=True) as caught, torchdoctor.watch() if observed else _nothing() as watched:
            warnings.simplefilter("always")
            compiled = torch.compile(model, backend="aot_eager")
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            x, y = torch.randn(32, 8), torch.randint(0, 4, (32,))
            for _ in range(6):
                optimizer.zero_grad()
                F.cross_entropy(compiled(x), y).backward()
                optimizer.step()
        if watched is not None:  # the compile cost is advice, nothing else is said
            assert [f.rule for f in watched.findings] == ["TD483"]
        stats = {**counters["stats"], **{f"frames.{k}": v for k, v in counters["frames"].items()}, "recompiles": sum(counters["recompiles"].values())}
        return stats, [str(w.message) for w in caught], {k: v.clone() for k, v in model.state_dict().items()}

    plain_stats, plain_warnings, plain_weights = compiled_run(observed=False)
    stats, caught, weights = compiled_run(observed=True)
    assert stats == plain_stats and caught == plain_warnings
    assert all(torch.equal(plain_weights[k], weights[k]) for k in weights)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
