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
from torchdoctor.observe.support import place

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


# -- TD481: the causes of recompilations, each with its fix --------------------------------------


class Counted(nn.Module):
    """Counts its calls in a Python int: dynamo guards on the attribute and compiles every value."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1  # the line that changes it
        return self.fc(x)


def recompiles(model: nn.Module, batches: list[int]) -> list[torchdoctor.Finding]:
    torch._dynamo.reset()
    with torchdoctor.watch() as watched:
        compiled = torch.compile(model, backend="eager")
        for batch in batches:
            compiled(torch.randn(batch, 4))  # the call
    return [f for f in watched.findings if f.rule == "TD481"]


def line_of(function: Callable[..., object], text: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(function)
    return next(start + n for n, line in enumerate(lines) if text in line)


def test_a_changing_batch_and_a_counter_attribute_are_two_causes_each_with_its_fix() -> None:
    [found] = recompiles(Counted(), [2, 3, 4, 5, 6])
    counter, call = line_of(Counted.forward, "self.calls += 1"), line_of(recompiles, "# the call")
    assert "2 causes" in found.message
    assert f"the attribute `self.calls` is different on each call (1, 2, 3), changed at {place((__file__, counter))} (3 of the 4" in found.message
    assert f"`x`'s size changes between calls (dim 0: 2 → 3), at the call at {place((__file__, call))} (1 of the 4" in found.message
    assert "(1) Dynamo compiles every new value of `self.calls`" in found.hint and "register_buffer" in found.hint
    assert "(2) Compile with `dynamic=True`" in found.hint and "mark_dynamic(x, dim)" in found.hint
    assert found.line == counter  # at the main cause's line
    causes = (found.evidence or {})["causes"]
    assert [(c["kind"], c["subject"], c["recompilations"], c["line"]) for c in causes] == [
        ("attribute", "self.calls", 3, counter), ("size", "x", 1, call)]


def test_a_counter_attribute_alone_is_one_cause_as_before() -> None:
    [found] = recompiles(Counted(), [2] * 5)
    counter = line_of(Counted.forward, "self.calls += 1")
    assert found.message.endswith(f"the attribute `self.calls` is different on each call (0, 1, 2, 3), changed at {place((__file__, counter))}")
    assert "causes" not in found.message and "(1)" not in found.hint and "register_buffer" in found.hint
    assert "size" not in found.message and "dynamic=True" not in found.hint


def test_a_batch_size_that_changes_once_and_a_counter_kept_in_a_buffer_are_silent() -> None:
    class Buffered(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.register_buffer("calls", torch.zeros((), dtype=torch.long))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.calls += 1
            return self.fc(x)

    assert recompiles(Buffered(), [2, 3, 4, 5, 6]) == []  # dynamo makes the batch dynamic once


CALLS = 4
GLOBAL_SCALE = 1


def _scale_by_global(x: torch.Tensor) -> torch.Tensor:
    return x * GLOBAL_SCALE


def _times(x: torch.Tensor, factor: object) -> torch.Tensor:
    return x * len(str(factor))


def _global_number() -> None:
    global GLOBAL_SCALE
    f = torch.compile(_scale_by_global, backend="eager")
    for n in range(CALLS):
        GLOBAL_SCALE = n + 2  # changes the global
        f(torch.ones(2))


#: a function compiled again and again for one kind of cause (real dynamo, the eager backend)
#: -> the words the cause must be told in, and its fix
KINDS: dict[str, tuple[Callable[[], object], str, str]] = {
    "dtype": (lambda: [torch.compile(_times, backend="eager")(torch.ones(2, dtype=d), 1)
                       for d in (torch.float32, torch.float64, torch.float16, torch.bfloat16)],
              "`x`'s dtype changes between calls (Float → Double → Half → BFloat16)", "cast it to one dtype"),
    "rank": (lambda: [torch.compile(_times, backend="eager")(torch.ones(*[2] * n), 1) for n in range(1, CALLS + 1)],
             "`x` has a different number of dimensions between calls (1 → 2 → 3 → 4)", "same number of dimensions"),
    "stride": (lambda: [torch.compile(_times, backend="eager")(t, 1) for t in
                        (torch.ones(3, 4), torch.ones(4, 3).t(), torch.ones(3, 8)[:, ::2], torch.ones(3, 12)[:, ::3])],
               "`x`'s memory layout (strides) changes between calls", "`.contiguous()`"),
    "string": (lambda: [torch.compile(_times, backend="eager")(torch.ones(2), "a" * n) for n in range(1, CALLS + 1)],
               "the Python value `factor` is different on each call ('a', 'aa', 'aaa')", "keep it the same across calls"),
    "global": (_global_number, "the Python number `GLOBAL_SCALE` is different on each call (2, 3, 4), changed at "
               f"{place((__file__, line_of(_global_number, '# changes the global')))}",
               "as a tensor argument"),
    "grad mode and autocast": (lambda: [_under(torch.compile(_times, backend="eager"), grad, autocast)
                                        for grad, autocast in ((True, False), (False, False), (True, True), (False, True))],
                               "it is called under a different global setting", "one grad mode and autocast setting"),
}


def _under(f: Callable[..., torch.Tensor], grad: bool, autocast: bool) -> torch.Tensor:
    with torch.set_grad_enabled(grad), torch.autocast("cpu", enabled=autocast):
        return f(torch.ones(2, requires_grad=True), 1)


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_of_failed_guard_is_told_with_its_own_fix(kind: str) -> None:
    calls, said, fix = KINDS[kind]
    torch._dynamo.reset()
    with torchdoctor.watch() as watched:
        calls()
    [found] = [f for f in watched.findings if f.rule == "TD481"]
    assert said in found.message and fix in found.hint.lower() + found.hint, (found.message, found.hint)
    assert "causes" not in found.message  # one kind: one cause
