"""Graphs kept alive across steps: TD147 (running totals) and TD148 (retain_graph), both sides."""

from __future__ import annotations

import runpy
from pathlib import Path

import torch
from torch import nn

from tests.observe.detectors.conftest import line_of, observing
from torchdoctor.observe.detectors.memory import LossHistory, RetainedGraphs, accumulations, reaches

HERE = __file__


def model_and_optimizer() -> tuple[nn.Module, torch.optim.Optimizer]:
    model = nn.Linear(4, 2)
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def loss_of(model: nn.Module) -> torch.Tensor:
    return model(torch.randn(8, 4)).pow(2).mean()


# --- TD147 ------------------------------------------------------------------------------


def total_with_history(steps: int = 6) -> torch.Tensor:
    model, optimizer = model_and_optimizer()
    total = 0.0
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_of(model)
        loss.backward()
        optimizer.step()
        total += loss  # keeps the graph
    return total


def total_of_numbers(steps: int = 6) -> float:
    model, optimizer = model_and_optimizer()
    total = 0.0
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_of(model)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


def total_by_addition(steps: int = 6) -> torch.Tensor:
    model, optimizer = model_and_optimizer()
    total = torch.zeros(())
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_of(model)
        loss.backward()
        optimizer.step()
        total = total + loss * 8  # the same, written out
    return total


def losses_kept_in_a_list(steps: int = 6, detach: bool = False) -> list[torch.Tensor]:
    model, optimizer = model_and_optimizer()
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_of(model)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach() if detach else loss)  # kept for the epoch's mean
    return losses


def micro_batches_stacked_each_step(steps: int = 6) -> None:
    model, optimizer = model_and_optimizer()
    for _ in range(steps):
        optimizer.zero_grad()
        parts = []
        for _micro in range(2):
            parts.append(loss_of(model))
        torch.stack(parts).mean().backward()
        optimizer.step()


def loss_terms_summed_within_a_step(steps: int = 6) -> None:
    model, optimizer = model_and_optimizer()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = 0
        loss += loss_of(model)
        loss += 0.1 * model.weight.abs().sum()
        loss.backward()
        optimizer.step()


def carried_state_that_is_trained(steps: int = 6) -> None:
    """A state accumulated and backpropagated every step (history on purpose, gradients flow)."""
    model, optimizer = model_and_optimizer()
    state = torch.zeros(2)
    for _ in range(steps):
        optimizer.zero_grad()
        state += model.bias
        state.sum().backward(retain_graph=True)
        optimizer.step()


def test_total_of_losses_with_history_is_flagged_at_the_accumulation() -> None:
    with observing(LossHistory) as observed:
        total_with_history()
    finding = observed.one("TD147")
    assert finding.line == line_of(HERE, "total += loss  # keeps the graph")
    assert "`total += loss`" in finding.message and "`total += loss.item()`" in finding.hint


def test_total_written_as_an_addition_is_flagged() -> None:
    with observing(LossHistory) as observed:
        total_by_addition()
    finding = observed.one("TD147")
    assert finding.line == line_of(HERE, "total = total + loss * 8")
    assert "`total = total + loss * 8`" in finding.message and "(loss * 8).item()" in finding.hint


def manual_updates(total_of: str, steps: int = 8) -> float:
    """Weights updated by hand, no torch optimizer: every backward() is a step."""
    model = nn.Linear(4, 2)
    total = 0.0
    for _ in range(steps):
        model.zero_grad()
        loss = loss_of(model)
        loss.backward()
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-0.1)
        total += loss if total_of == "tensor" else loss.item()  # manual total
    return float(total)


def test_a_total_with_history_is_flagged_without_an_optimizer() -> None:
    with observing(LossHistory) as observed:
        manual_updates("tensor")
    assert observed.one("TD147").line == line_of(HERE, "# manual total")
    with observing(LossHistory) as observed:
        manual_updates("number")
    assert observed.codes == set()


def test_totals_of_numbers_and_terms_of_one_step_are_not_flagged() -> None:
    with observing(LossHistory) as observed:
        total_of_numbers()
        loss_terms_summed_within_a_step()
    assert observed.codes == set()


def test_a_list_of_losses_with_history_is_flagged_at_the_append() -> None:
    with observing(LossHistory) as observed:
        losses_kept_in_a_list()
    finding = observed.one("TD147")
    assert finding.line == line_of(HERE, "# kept for the epoch's mean")
    assert "`losses.append(loss.detach() if detach else loss)`" in finding.message


def test_detached_lists_and_lists_of_one_step_are_not_flagged() -> None:
    with observing(LossHistory) as observed:
        losses_kept_in_a_list(detach=True)
        micro_batches_stacked_each_step()
    assert observed.codes == set()


def test_a_state_that_backward_goes_through_is_not_a_metric() -> None:
    with observing(LossHistory) as observed:
        carried_state_that_is_trained()
    assert "TD147" not in observed.codes


def test_module_level_training_loop(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n"
        "from torch import nn\n"
        "model = nn.Linear(4, 1)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "running = 0\n"
        "for step in range(5):\n"
        "    optimizer.zero_grad()\n"
        "    loss = model(torch.randn(8, 4)).pow(2).mean()\n"
        "    loss.backward()\n"
        "    optimizer.step()\n"
        "    running += loss\n",
        encoding="utf-8",
    )
    with observing(LossHistory) as observed:
        runpy.run_path(str(script), run_name="__main__")
    finding = observed.one("TD147")
    assert (finding.file, finding.line) == (str(script), 11)


def test_accumulations_are_read_from_the_source() -> None:
    found = accumulations(total_by_addition.__code__)
    assert [(a.target, a.value, a.kind) for a in found] == [("total", "loss * 8", "sum")]


def test_reaches_follows_the_graph() -> None:
    x = torch.randn(3, requires_grad=True)
    first = (x * 2).sum()
    second = first + (x * 3).sum()
    assert reaches(second.grad_fn, first.grad_fn)
    assert not reaches(first.grad_fn, second.grad_fn)


# --- TD148 ------------------------------------------------------------------------------


def retain_every_step(steps: int = 6) -> None:
    model, optimizer = model_and_optimizer()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_of(model)
        loss.backward(retain_graph=True)  # nothing uses it
        optimizer.step()


def carry_history(steps: int = 7) -> None:
    """A running state carried into the next step without detach: each backward reaches
    further back (the old part saves no weights, so nothing raises)."""
    projection, head = nn.Linear(4, 8), nn.Linear(8, 1)
    optimizer = torch.optim.SGD([*projection.parameters(), *head.parameters()], lr=0.01)
    state = torch.zeros(2, 8)
    for _ in range(steps):
        optimizer.zero_grad()
        state = 0.5 * state + projection(torch.randn(2, 4))
        loss = head(state).pow(2).mean()
        loss.backward(retain_graph=True)  # carries every step
        optimizer.step()


def carry_detached(steps: int = 7) -> None:
    projection, head = nn.Linear(4, 8), nn.Linear(8, 1)
    optimizer = torch.optim.SGD([*projection.parameters(), *head.parameters()], lr=0.01)
    state = torch.zeros(2, 8)
    for _ in range(steps):
        optimizer.zero_grad()
        state = 0.5 * state.detach() + projection(torch.randn(2, 4))
        head(state).pow(2).mean().backward()
        optimizer.step()


def two_losses_on_one_graph(steps: int = 6) -> None:
    trunk, first, second = nn.Linear(4, 8), nn.Linear(8, 1), nn.Linear(8, 1)
    optimizer = torch.optim.SGD([*trunk.parameters(), *first.parameters(), *second.parameters()], lr=0.01)
    for _ in range(steps):
        optimizer.zero_grad()
        features = trunk(torch.randn(4, 4))
        first(features).mean().backward(retain_graph=True)
        second(features).mean().backward()
        optimizer.step()


def gan(steps: int = 6) -> None:
    """The discriminator's backward retains the generator's graph for the generator's loss."""
    generator, critic = nn.Linear(2, 4), nn.Linear(4, 1)
    g_optimizer, d_optimizer = torch.optim.Adam(generator.parameters()), torch.optim.Adam(critic.parameters())
    for _ in range(steps):
        fake = generator(torch.randn(8, 2))
        d_optimizer.zero_grad()
        (critic(fake).mean() - critic(torch.randn(8, 4)).mean()).backward(retain_graph=True)
        d_optimizer.step()
        g_optimizer.zero_grad()
        (-critic(fake).mean()).backward()
        g_optimizer.step()


def test_retained_graph_nothing_uses_is_flagged() -> None:
    with observing(RetainedGraphs) as observed:
        retain_every_step()
    finding = observed.one("TD148")
    assert finding.line == line_of(HERE, "# nothing uses it")
    assert "no later backward() uses it" in finding.message


def test_history_carried_across_steps_is_flagged() -> None:
    with observing(RetainedGraphs) as observed:
        carry_history()
    finding = observed.one("TD148")
    assert finding.line == line_of(HERE, "# carries every step")
    assert "keeps every step's graph alive" in finding.message


def test_retained_graphs_that_are_used_are_not_flagged() -> None:
    with observing(RetainedGraphs) as observed:
        carry_detached()
        two_losses_on_one_graph()
        gan()
    assert observed.codes == set()
