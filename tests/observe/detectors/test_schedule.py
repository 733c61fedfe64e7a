"""TD428 learning-rate-collapsed, both sides, in-process with real torch schedulers.

The schedules are run on a one-parameter SGD optimizer whose steps have no gradient (the step
hooks fire, nothing is computed), so a 90-epoch schedule takes a fraction of a second.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn
from torch.optim import lr_scheduler as S

from tests.observe.detectors.conftest import line_of, observing
from torchdoctor.observe.detectors.schedule import LearningRateCollapse, cadence

HERE = __file__
EPOCHS, BATCHES = 90, 10
TOTAL = EPOCHS * BATCHES

Make = Callable[[torch.optim.Optimizer], Any]


def train(make: Make | None, where: str = "batch", *, epochs: int = EPOCHS, batches: int = BATCHES,
          groups: list[dict[str, Any]] | None = None, metric: float | None = None) -> list[float]:
    """Step an optimizer `epochs x batches` times and its scheduler per `where`; the learning
    rates of the first group, step by step."""
    optimizer = torch.optim.SGD(groups or [nn.Parameter(torch.zeros(1))], lr=0.1)
    scheduler = make(optimizer) if make is not None else None
    rates = []
    for epoch in range(epochs):
        for batch in range(batches):
            rates.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            if scheduler is not None and where == "batch":
                scheduler.step() if metric is None else scheduler.step(metric)  # per batch
            elif scheduler is not None and where == "fraction":
                scheduler.step(epoch + batch / batches)
        if scheduler is not None and where == "epoch":
            scheduler.step() if metric is None else scheduler.step(metric)
    return rates


def metric_for(make: Make | None) -> float | None:
    """ReduceLROnPlateau steps on a metric: a stalled one."""
    return 1.0 if make is not None and "ReduceLROnPlateau" in make.__code__.co_names else None


def two_groups() -> list[dict[str, Any]]:
    return [{"params": [nn.Parameter(torch.zeros(1))]}, {"params": [nn.Parameter(torch.zeros(1))]}]


def test_an_epoch_schedule_stepped_every_batch_is_flagged_at_the_scheduler_step() -> None:
    with observing(LearningRateCollapse) as observed:
        train(lambda o: S.StepLR(o, step_size=30, gamma=0.1))
    finding = observed.one("TD428")
    assert finding.line == line_of(HERE, "# per batch")
    assert finding.file == HERE
    assert "below 1e-6 of its peak (0.1) at optimizer step 211 and stayed there for 690 of 900 steps" in finding.message
    assert "`scheduler.step()` (StepLR, step_size=30, gamma=0.1) ran 900 times, once per optimizer step" in finding.message
    assert finding.evidence == {"peak_lr": 0.1, "low_steps": 690, "optimizer_steps": 900, "scheduler": "StepLR",
                                "scheduler_steps": 900}


@pytest.mark.parametrize(
    ("make", "where"),
    [
        pytest.param(lambda o: S.ExponentialLR(o, gamma=0.9), "batch", id="ExponentialLR"),
        pytest.param(lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.0, total_iters=EPOCHS), "batch", id="LinearLR-to-0"),
        pytest.param(lambda o: S.PolynomialLR(o, total_iters=EPOCHS), "batch", id="PolynomialLR"),
        pytest.param(lambda o: S.LambdaLR(o, lambda s: max(0.0, 1 - s / (TOTAL // 3))), "batch", id="linear-schedule-sized-for-one-epoch-of-three"),
        pytest.param(lambda o: S.ReduceLROnPlateau(o, patience=10), "batch", id="ReduceLROnPlateau-patience-in-batches"),
        pytest.param(lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.1, total_iters=5), S.StepLR(o, 30, 0.1)], [5]), "batch",
                     id="SequentialLR"),
    ],
)
def test_other_collapsing_schedules_are_flagged(make: Make, where: str) -> None:
    with observing(LearningRateCollapse) as observed:
        train(make, where, metric=metric_for(make))
    assert observed.one("TD428").line == line_of(HERE, "# per batch")


def test_the_scheduler_a_sequence_steps_is_counted_once() -> None:
    with observing(LearningRateCollapse) as observed:
        train(lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.1, total_iters=5), S.StepLR(o, 30, 0.1)], [5]))
    assert "(SequentialLR) ran 900 times, once per optimizer step" in observed.one("TD428").message


def test_a_training_function_is_judged_when_its_optimizer_is_freed() -> None:
    with observing(LearningRateCollapse) as observed:
        train(lambda o: S.StepLR(o, step_size=30, gamma=0.1))
        model = nn.Linear(2, 1)
        later = torch.optim.SGD(model.parameters(), lr=0.1)
        later.step()  # the freed optimizer's finding is written at the next step
        assert observed.codes == {"TD428"}


LEGITIMATE = [
    pytest.param(None, "batch", id="constant"),
    pytest.param(lambda o: S.StepLR(o, step_size=30, gamma=0.1), "epoch", id="StepLR-per-epoch"),
    pytest.param(lambda o: S.MultiStepLR(o, [30, 60, 80], gamma=0.1), "epoch", id="MultiStepLR-per-epoch"),
    pytest.param(lambda o: S.ExponentialLR(o, gamma=0.95), "epoch", id="ExponentialLR-per-epoch"),
    pytest.param(lambda o: S.CosineAnnealingLR(o, T_max=TOTAL), "batch", id="CosineAnnealingLR-to-0-per-batch"),
    pytest.param(lambda o: S.CosineAnnealingLR(o, T_max=EPOCHS), "epoch", id="CosineAnnealingLR-per-epoch"),
    pytest.param(lambda o: S.OneCycleLR(o, max_lr=0.1, total_steps=TOTAL), "batch", id="OneCycleLR"),
    pytest.param(lambda o: S.LinearLR(o, start_factor=1e-8, total_iters=TOTAL // 2), "batch", id="LinearLR-warm-up"),
    pytest.param(lambda o: S.LambdaLR(o, lambda s: min(1.0, s / (TOTAL // 2))), "batch", id="LambdaLR-warm-up-from-0"),
    pytest.param(lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.0, total_iters=TOTAL), "batch", id="LinearLR-decay-to-0"),
    pytest.param(lambda o: S.LambdaLR(o, lambda s: s / 50 if s < 50 else max(0.0, (TOTAL - s) / (TOTAL - 50))), "batch",
                 id="linear-warm-up-and-decay"),
    pytest.param(lambda o: S.PolynomialLR(o, total_iters=TOTAL, power=2.0), "batch", id="PolynomialLR-sized"),
    pytest.param(lambda o: S.CosineAnnealingWarmRestarts(o, T_0=100), "batch", id="CosineAnnealingWarmRestarts"),
    pytest.param(lambda o: S.CosineAnnealingWarmRestarts(o, T_0=10, T_mult=2), "fraction", id="CosineAnnealingWarmRestarts-fraction"),
    pytest.param(lambda o: S.CyclicLR(o, 1e-4, 0.1, step_size_up=50), "batch", id="CyclicLR"),
    pytest.param(lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.01, total_iters=50), S.CosineAnnealingLR(o, TOTAL - 50)], [50]),
                 "batch", id="SequentialLR-warm-up-cosine"),
    pytest.param(lambda o: S.ReduceLROnPlateau(o, patience=2), "epoch", id="ReduceLROnPlateau-per-epoch-stalled"),
]


@pytest.mark.parametrize(("make", "where"), LEGITIMATE)
def test_legitimate_schedules_are_not_flagged(make: Make | None, where: str) -> None:
    with observing(LearningRateCollapse) as observed:
        train(make, where, metric=metric_for(make))
    assert observed.codes == set()


def test_a_frozen_group_and_a_group_sent_to_0_are_not_flagged() -> None:
    with observing(LearningRateCollapse) as observed:
        frozen = [{"params": [nn.Parameter(torch.zeros(1))], "lr": 0.0}, {"params": [nn.Parameter(torch.zeros(1))]}]
        train(lambda o: S.StepLR(o, step_size=30, gamma=0.5), groups=frozen)  # the trained group stays above 1e-6
        train(lambda o: S.LambdaLR(o, [lambda s: 1.0 if s < 100 else 0.0, lambda s: 1.0]), groups=two_groups())
        train(None, groups=[{"params": [nn.Parameter(torch.zeros(1))], "lr": 0.0}])
    assert observed.codes == set()


def test_a_learning_rate_collapsed_by_hand_or_by_another_optimizer_s_scheduler_is_not_flagged() -> None:
    with observing(LearningRateCollapse) as observed:
        first = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1)
        second = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1)
        scheduler = S.CosineAnnealingLR(second, T_max=TOTAL)
        for _ in range(TOTAL):
            first.step()
            first.param_groups[0]["lr"] *= 0.5
            second.step()
            scheduler.step()
    assert observed.codes == set()


def test_twenty_low_steps_are_needed() -> None:
    with observing(LearningRateCollapse) as observed:
        train(lambda o: S.StepLR(o, step_size=1, gamma=0.01), epochs=3, batches=10)  # low from step 5: 26 of 30
        train(lambda o: S.StepLR(o, step_size=1, gamma=0.01), epochs=1, batches=15)  # 11 of 15: too few
    assert observed.codes == {"TD428"}
    assert "at optimizer step 5 and stayed there for 26 of 30 steps" in observed.one("TD428").message


def test_a_tensor_learning_rate_is_not_read() -> None:
    with observing(LearningRateCollapse) as observed:
        optimizer = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=torch.tensor(0.1))
        scheduler = S.StepLR(optimizer, step_size=30, gamma=0.1)
        for _ in range(TOTAL):
            optimizer.step()
            scheduler.step()
    assert observed.codes == set()


class Warmup(S.LRScheduler):
    """A scheduler written by the user, with its own step()."""

    def get_lr(self) -> list[float]:
        return [base * 0.1 ** (self.last_epoch // 30) for base in self.base_lrs]

    def step(self, epoch: int | None = None) -> None:
        super().step(epoch)


def test_a_user_scheduler_is_flagged_at_the_user_s_call() -> None:
    with observing(LearningRateCollapse) as observed:
        train(Warmup)
    finding = observed.one("TD428")
    assert finding.line == line_of(HERE, "# per batch")
    assert "(Warmup) ran 900 times" in finding.message


@pytest.mark.parametrize(
    ("make", "where"),
    [
        pytest.param(lambda o: S.StepLR(o, step_size=30, gamma=0.1), "batch", id="StepLR"),
        pytest.param(lambda o: S.ReduceLROnPlateau(o, patience=3), "batch", id="ReduceLROnPlateau"),
        pytest.param(lambda o: S.CosineAnnealingWarmRestarts(o, T_0=7), "fraction", id="CosineAnnealingWarmRestarts"),
        pytest.param(lambda o: S.ChainedScheduler([S.ConstantLR(o, 0.5, total_iters=20), S.ExponentialLR(o, 0.99)]), "batch",
                     id="ChainedScheduler"),
    ],
)
def test_observing_changes_no_learning_rate(make: Make, where: str) -> None:
    plain = train(make, where, metric=metric_for(make))
    with observing(LearningRateCollapse):
        observed = train(make, where, metric=metric_for(make))
    assert observed == plain


def test_the_stand_ins_return_what_the_originals_return_and_are_undone() -> None:
    originals = (S.LRScheduler.step, S.LRScheduler.__init__, S.ReduceLROnPlateau.step, S.StepLR.__init__)
    with observing(LearningRateCollapse):
        assert S.LRScheduler.step is not originals[0]
        optimizer = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1)
        step, plateau = S.StepLR(optimizer, 2), S.ReduceLROnPlateau(optimizer)
        optimizer.step()
        assert step.step() is None
        assert plateau.step(1.0) is None
    assert (S.LRScheduler.step, S.LRScheduler.__init__, S.ReduceLROnPlateau.step, S.StepLR.__init__) == originals


def test_cadence_wording() -> None:
    assert cadence(900, 900) == "once per optimizer step"
    assert cadence(3600, 900) == "4 times per optimizer step"
    assert cadence(450, 900) == "once every 2 optimizer steps"
