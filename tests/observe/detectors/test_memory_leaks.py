"""TD440: memory that grows step after step, with its holder named; both sides, and legitimate growth."""

from __future__ import annotations

import collections
from collections.abc import Callable

import pytest
import torch
from torch import nn

from tests.observe.detectors.conftest import line_of, observing
from torchdoctor.observe.detectors.memory import LossHistory, RetainedGraphs
from torchdoctor.observe.detectors.memory_account import MemoryAccount
from torchdoctor.observe.detectors.memory_leaks import POINTS, MemoryLeaks, Snapshot, leak_kind

HERE = __file__
STEPS = 40  # censuses at steps 4, 8, 16 and 32: growth over three intervals


def loop(step_body: Callable[[int, nn.Module, torch.Tensor, torch.Tensor], None], steps: int = STEPS, features: int = 16) -> None:
    """A small training loop; `step_body(step, model, x, loss)` runs after each optimizer step."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(features, 64), nn.ReLU(), nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(steps):
        x, y = torch.randn(32, features), torch.randint(0, 4, (32,))
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        step_body(step, model, x, loss)


def leaks(run: Callable[[], None], *extra: type) -> list:  # type: ignore[type-arg]
    with observing(MemoryAccount, MemoryLeaks, *extra) as observed:
        run()
    return [f for f in observed.findings if f.rule in ("TD440", "TD147", "TD148")]


# --- what grows with graphs ----------------------------------------------------------------


def outputs_kept_by_a_helper() -> None:
    kept: list[torch.Tensor] = []

    def remember(model: nn.Module, x: torch.Tensor) -> None:
        kept.append(model[:2](x))  # with autograd on, never backpropagated

    loop(lambda step, model, x, loss: remember(model, x))


def test_a_list_filled_by_a_helper_with_graphs_is_a_leak_named_at_its_append() -> None:
    [finding] = leaks(outputs_kept_by_a_helper)
    assert finding.rule == "TD440"
    assert finding.line == line_of(HERE, "kept.append(model[:2](x))")
    assert "`kept` (a list created at" in finding.message
    assert "of activations saved for a backward() that never comes" in finding.message
    assert finding.evidence["kind"] == "graph" and finding.evidence["bytes_per_step"] == 10_240  # the output and its input x
    assert ".detach()" in finding.hint


def cache_keyed_per_step() -> None:
    cache: dict[int, torch.Tensor] = {}

    def keep(step: int, model: nn.Module, x: torch.Tensor, loss: torch.Tensor) -> None:
        cache[step] = model(x)  # a "cache" that never hits: a key per step

    loop(keep)


def test_a_dict_keyed_per_step_is_filled_at_its_setitem() -> None:
    [finding] = leaks(cache_keyed_per_step)
    assert finding.line == line_of(HERE, "cache[step] = model(x)  # a")
    assert "`cache` (a dict created at" in finding.message and "filled at" in finding.message


class Recorder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(16, 16)
        self.seen: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.layer(x)
        self.seen.append(out)  # a module attribute that keeps every forward's output
        return out


def module_attribute_appended() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(Recorder(), nn.ReLU(), nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(STEPS):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(torch.randn(8, 16)), torch.randint(0, 4, (8,))).backward()
        optimizer.step()


def test_a_module_attribute_appended_in_forward_is_named_by_its_attribute() -> None:
    [finding] = leaks(module_attribute_appended)
    assert finding.line == line_of(HERE, "self.seen.append(out)")
    assert "`model.0.seen` (a list attribute" in finding.message


def hook_closure() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def watch(module: nn.Module) -> None:
        captured = []
        module.register_forward_hook(lambda layer, inputs, output: captured.append(output))

    watch(model[0])
    for _ in range(STEPS):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(torch.randn(8, 16)), torch.randint(0, 4, (8,))).backward()
        optimizer.step()


def test_a_hook_closure_is_named_with_its_hook_and_module() -> None:
    [finding] = leaks(hook_closure)
    assert finding.line == line_of(HERE, "lambda layer, inputs, output: captured.append(output)")
    assert "`captured` (a list created at" in finding.message
    assert "in the closure of `<lambda>()`, a forward hook on `model.0`" in finding.message


# --- views and tracebacks ------------------------------------------------------------------


def views_of_batches(clone: bool) -> None:
    rows: list[torch.Tensor] = []
    loop(lambda step, model, x, loss: rows.append(x[0].clone() if clone else x[0]), features=256)  # one row per batch


def test_small_views_that_keep_whole_batches_are_a_leak() -> None:
    [finding] = leaks(lambda: views_of_batches(clone=False))
    assert finding.evidence["kind"] == "view"
    assert "small views" in finding.message and "keep their whole base storages alive" in finding.message
    assert "+32.0 KiB per step" in finding.message  # 32 x 256 floats per batch, for a row of 1 KiB
    assert ".clone()" in finding.hint


def failing_helper(x: torch.Tensor) -> None:
    scaled = x * 2  # a tensor in this frame, kept by the traceback
    raise ValueError(f"refused a batch of {len(scaled)}")


def exceptions_kept(as_text: bool) -> None:
    errors: list[object] = []

    def step_body(step: int, model: nn.Module, x: torch.Tensor, loss: torch.Tensor) -> None:
        try:
            failing_helper(x)
        except ValueError as error:
            errors.append(str(error) if as_text else error)

    loop(step_body)


def test_exceptions_kept_with_their_tracebacks_are_a_leak() -> None:
    [finding] = leaks(lambda: exceptions_kept(as_text=False))
    assert finding.evidence["kind"] == "traceback"
    assert "whose tracebacks keep the frames they went through alive" in finding.message
    assert "`scaled` of failing_helper()" in finding.message
    assert "str(error)" in finding.hint


# --- carried graphs, and what TD147 / TD148 already say ------------------------------------


def carried_state() -> None:
    torch.manual_seed(0)
    encoder, head = nn.Sequential(nn.Linear(8, 32), nn.ReLU()), nn.Linear(32, 1)
    optimizer = torch.optim.SGD([*encoder.parameters(), *head.parameters()], lr=0.01)
    state = torch.zeros(32)
    for _ in range(STEPS):
        optimizer.zero_grad()
        head(encoder(torch.randn(4, 8)) + state).pow(2).mean().backward(retain_graph=True)
        optimizer.step()
        state = 0.5 * state + encoder(torch.randn(4, 8)).mean(dim=0)


def test_a_carried_graph_adds_its_numbers_to_the_retain_graph_finding() -> None:
    [finding] = leaks(carried_state, RetainedGraphs)
    assert finding.rule == "TD148"
    assert "(measured: `state` (rebound from itself at" in finding.message
    assert finding.evidence["memory"]["kind"] == "chain"
    assert finding.evidence["memory"]["bytes_per_step"] > 0


def losses_in_a_list() -> None:
    losses = []
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss)


def test_a_list_td147_reported_gets_the_numbers_not_a_second_finding() -> None:
    [finding] = leaks(losses_in_a_list, LossHistory)
    assert finding.rule == "TD147"
    assert "(measured: `losses` (a list created at" in finding.message
    assert finding.evidence["memory"]["kind"] == "graph"


# --- legitimate growth: no warning ---------------------------------------------------------


def replay_buffer() -> None:
    buffer: list[torch.Tensor] = []
    loop(lambda step, model, x, loss: buffer.extend(model(x).detach()))  # detached, growing


def bounded_cache() -> None:
    cache: collections.OrderedDict[int, torch.Tensor] = collections.OrderedDict()

    def keep(step: int, model: nn.Module, x: torch.Tensor, loss: torch.Tensor) -> None:
        cache[step] = model(x)  # with its graph, but never more than 6 entries
        if len(cache) > 6:
            cache.popitem(last=False)

    loop(keep)


def bounded_deque_of_views() -> None:
    recent: collections.deque[torch.Tensor] = collections.deque(maxlen=5)
    loop(lambda step, model, x, loss: recent.append(x[0]))


def collected_predictions() -> None:
    predictions: list[torch.Tensor] = []
    loop(lambda step, model, x, loss: predictions.append(model(x).argmax(dim=1)))  # no graph: argmax


@pytest.mark.parametrize("run", [replay_buffer, bounded_cache, bounded_deque_of_views, collected_predictions,
                                 lambda: views_of_batches(clone=True), lambda: exceptions_kept(as_text=True)],
                         ids=["replay-buffer", "bounded-cache", "bounded-deque-of-views", "predictions", "cloned-rows",
                              "error-messages"])
def test_legitimate_growth_is_not_a_leak(run: Callable[[], None]) -> None:
    assert leaks(run) == []


# --- the rule itself ----------------------------------------------------------------------


def snapshots(values: list[int], steps: list[int] | None = None, **fields: object) -> list[Snapshot]:
    steps = steps or [4, 8, 16, 32][: len(values)]
    base = {"tensors": 1, "graphs": 0, "views": 0, "view_bytes": 0, "bytes": 0, "graph_bytes": 0, "own_bytes": 0,
            "length": None, "traceback": False, "kind": "list"}
    return [Snapshot(step, **{**base, "graphs": value, "tensors": value, **fields}) for step, value in zip(steps, values)]  # type: ignore[arg-type]


def test_growth_must_be_steady_and_seen_at_every_census() -> None:
    assert POINTS == 4
    assert leak_kind(snapshots([4, 8, 16, 32])) == "graph"
    assert leak_kind(snapshots([4, 8, 16])) is None  # not enough censuses yet
    assert leak_kind(snapshots([4, 8, 16, 16])) is None  # stopped: a bound was reached
    assert leak_kind(snapshots([4, 5, 6, 300])) is None  # a jump, not a steady growth
    assert leak_kind(snapshots([0, 0, 0, 0])) is None
