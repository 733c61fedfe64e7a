"""The part-A detectors on both sides: each bug pattern fires, its correct look-alikes do not.

In-process through `torchdoctor.watch()`; each case is a few optimizer steps of a tiny model.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchdoctor


def codes(train: Callable[[], object]) -> dict[str, list[torchdoctor.Finding]]:
    torch.manual_seed(0)
    with torchdoctor.watch() as watched:
        train()
    found: dict[str, list[torchdoctor.Finding]] = {}
    for finding in watched.report.findings:
        found.setdefault(finding.rule, []).append(finding)
    return found


def data() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(16, 8), torch.randint(0, 4, (16,))


# -- gradient resets ---------------------------------------------------------------------------


def zero_grad_between_backward_and_step() -> None:
    model, (x, y) = nn.Linear(8, 4), data()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(4):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.zero_grad(set_to_none=False)
        optimizer.step()


def accumulation_every_two_batches() -> None:
    model, (x, y) = nn.Linear(8, 4), data()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(8):
        (F.cross_entropy(model(x), y) / 2).backward()
        if i % 2 == 1:
            optimizer.step()
            optimizer.zero_grad()


def manual_reset_through_data() -> None:
    model, (x, y) = nn.Linear(8, 4), data()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(4):
        for p in model.parameters():
            if p.grad is not None:
                p.grad.data.zero_()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


def no_reset_with_clipping() -> None:
    model, (x, y) = nn.Linear(8, 4), data()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(4):
        F.cross_entropy(model(x), y).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()


def gan_two_optimizers() -> None:
    """DCGAN's order: the generator's loss also fills the discriminator's gradients, which
    `netD.zero_grad()` resets before the discriminator's own backward."""
    netG, netD = nn.Linear(4, 8), nn.Linear(8, 1)
    optG = torch.optim.Adam(netG.parameters(), lr=1e-3)
    optD = torch.optim.Adam(netD.parameters(), lr=1e-3)
    real = torch.randn(16, 8)
    for _ in range(4):
        netD.zero_grad()
        fake = netG(torch.randn(16, 4))
        lossD = F.softplus(-netD(real)).mean() + F.softplus(netD(fake.detach())).mean()
        lossD.backward()
        optD.step()
        netG.zero_grad()
        lossG = F.softplus(-netD(fake)).mean()
        lossG.backward()
        optG.step()


def accumulation_reset_every_batch() -> None:
    model, (x, y) = nn.Linear(8, 4), data()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(12):
        model.zero_grad()  # undoes the accumulation
        (F.cross_entropy(model(x), y) / 3).backward()
        if i % 3 == 2:
            optimizer.step()


def adversarial_input_gradient_then_step() -> None:
    """FGSM adversarial training: a backward for the input's gradient, reset, then the real one."""
    model, (x, y) = nn.Linear(8, 4), data()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(4):
        x_adv = x.clone().requires_grad_(True)
        F.cross_entropy(model(x_adv), y).backward()
        x_adv = (x + 0.01 * x_adv.grad.sign()).detach()
        optimizer.zero_grad()
        F.cross_entropy(model(x_adv), y).backward()
        optimizer.step()


def step_skipped_on_a_bad_loss() -> None:
    """A step skipped now and then (here: on the first iteration only) throws one backward away."""
    model, (x, y) = nn.Linear(8, 4), data()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(6):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y) * (float("inf") if i == 0 else 1.0)
        loss.backward()
        if torch.isfinite(loss):
            optimizer.step()


def lbfgs(reset: bool) -> Callable[[], None]:
    """LBFGS evaluates its closure several times inside each step(): the reset belongs in it."""

    def train() -> None:
        model, (x, y) = nn.Linear(8, 4), data()
        optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4)
        for _ in range(5):
            def closure() -> torch.Tensor:
                if reset:
                    optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                return loss

            optimizer.step(closure)

    train.__name__ = f"lbfgs_closure_{'with' if reset else 'without'}_zero_grad"
    return train


@pytest.mark.parametrize(
    "train, expected",
    [
        (lbfgs(reset=False), {"TD110", "TD491"}),  # the accumulated gradients blow the weights up
        (lbfgs(reset=True), set()),
        (zero_grad_between_backward_and_step, {"TD111"}),
        (accumulation_reset_every_batch, {"TD115"}),
        (adversarial_input_gradient_then_step, set()),
        (step_skipped_on_a_bad_loss, {"TD145"}),  # the infinite loss, not the skipped step
        (accumulation_every_two_batches, set()),
        (manual_reset_through_data, set()),
        (no_reset_with_clipping, {"TD110"}),
        (gan_two_optimizers, set()),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_gradient_resets(train: Callable[[], None], expected: set[str]) -> None:
    assert set(codes(train)) == expected


def test_a_closure_without_reset_is_told_to_reset_in_the_closure() -> None:
    (finding,) = codes(lbfgs(reset=False))["TD110"]
    assert "closure" in finding.message and "start of the closure" in finding.hint


def test_accumulation_reset_points_at_the_zero_grad() -> None:
    (finding,) = codes(accumulation_reset_every_batch)["TD115"]
    assert finding.line == accumulation_reset_every_batch.__code__.co_firstlineno + 4
    assert "once every 3 backward passes" in finding.message


def test_zero_grad_before_step_points_at_the_zero_grad() -> None:
    (finding,) = codes(zero_grad_between_backward_and_step)["TD111"]
    assert finding.line == zero_grad_between_backward_and_step.__code__.co_firstlineno + 6


# -- parameters without gradient, parameters without optimizer ----------------------------------


class TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.head = nn.Linear(8, 4)
        self.spare = nn.Linear(8, 4)  # built, never called

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.body(x)))


def unused_layer() -> None:
    model, (x, y) = TwoHeads(), data()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


def backbone_under_no_grad() -> None:
    backbone, head, (x, y) = nn.Linear(8, 8), nn.Linear(8, 4), data()
    optimizer = torch.optim.SGD([*backbone.parameters(), *head.parameters()], lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        with torch.no_grad():
            features = backbone(x)
        F.cross_entropy(head(features), y).backward()
        optimizer.step()


def teacher_without_no_grad() -> None:
    teacher, student, (x, _y) = nn.Linear(8, 4), nn.Linear(8, 4), data()
    teacher.eval()
    optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
    for _ in range(4):
        optimizer.zero_grad()
        loss = F.kl_div(F.log_softmax(student(x), 1), F.softmax(teacher(x), 1), reduction="batchmean")
        loss.backward()
        optimizer.step()


def test_a_layer_that_never_runs_is_a_warning() -> None:
    (finding,) = codes(unused_layer)["TD120"]
    assert finding.severity.value == "warning" and "spare.weight, spare.bias" in finding.message
    assert "never ran" in finding.message


def teacher_fed_to_a_loss_module() -> None:
    """The teacher's parameters are in the optimizer too (one `parameters()` for both), but its
    output under no_grad only reaches a loss module: a teacher, not a stage of the model."""
    teacher, student, (x, _y) = nn.Linear(8, 4), nn.Linear(8, 4), data()
    kl = nn.KLDivLoss(reduction="batchmean")
    optimizer = torch.optim.SGD([*teacher.parameters(), *student.parameters()], lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        with torch.no_grad():
            target = F.softmax(teacher(x), 1)
        kl(F.log_softmax(student(x), 1), target).backward()
        optimizer.step()


def frozen_backbone_under_no_grad() -> None:
    backbone, head, (x, y) = nn.Linear(8, 8), nn.Linear(8, 4), data()
    backbone.requires_grad_(False)
    optimizer = torch.optim.SGD([*backbone.parameters(), *head.parameters()], lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        with torch.no_grad():
            features = backbone(x)
        F.cross_entropy(head(features), y).backward()
        optimizer.step()


class FrozenInsideForward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone, self.head = nn.Linear(8, 8), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            features = self.backbone(x)
        return self.head(features)


def backbone_frozen_inside_forward() -> None:
    model, (x, y) = FrozenInsideForward(), data()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


def test_a_model_given_to_the_optimizer_but_run_under_no_grad_before_a_trained_one() -> None:
    (finding,) = codes(backbone_under_no_grad)["TD124"]
    assert finding.line == backbone_under_no_grad.__code__.co_firstlineno + 6  # features = backbone(x)
    assert "weight, bias" in finding.message and "fed `Linear`, which trained" in finding.message


@pytest.mark.parametrize(
    "train", [teacher_without_no_grad, teacher_fed_to_a_loss_module, frozen_backbone_under_no_grad, backbone_frozen_inside_forward],
    ids=lambda f: f.__name__,
)
def test_intentional_freezing_is_not_reported(train: Callable[[], None]) -> None:
    assert codes(train) == {}


# -- loss inputs --------------------------------------------------------------------------------


def loss_case(make_loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> Callable[[], None]:
    def train() -> None:
        model, (x, y) = nn.Linear(8, 4), data()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            optimizer.zero_grad()
            make_loss(model(x), y).backward()
            optimizer.step()

    return train


@pytest.mark.parametrize(
    "make_loss, expected",
    [
        (lambda out, y: F.nll_loss(F.log_softmax(out, dim=0), y), {"TD107"}),
        (lambda out, y: F.cross_entropy(out.softmax(-1).view(16, 4), y), {"TD101"}),
        (lambda out, y: F.nll_loss(F.softmax(out, 1).log(), y), set()),
        (lambda out, y: F.cross_entropy(F.log_softmax(out, 1), y), set()),
        (lambda out, y: F.nll_loss(F.log_softmax(out.t(), dim=0).t(), y), set()),
        (lambda out, y: F.mse_loss(out, torch.zeros(4)), set()),
        (lambda out, y: F.mse_loss(out[:, :1], y.float()), {"TD104"}),
        (lambda out, y: F.binary_cross_entropy_with_logits(out, torch.ones_like(out)), set()),
        (lambda out, y: F.cross_entropy(torch.sigmoid(out), y), {"TD119"}),
        (lambda out, y: F.binary_cross_entropy(torch.sigmoid(out), F.one_hot(y, 4).float()), set()),
        (lambda out, y: F.kl_div(F.softmax(out, 1), torch.full_like(out, 0.25), reduction="batchmean"), {"TD109"}),
        (lambda out, y: nn.KLDivLoss(reduction="batchmean")(F.log_softmax(out, 1), F.log_softmax(out * 2, 1)), {"TD109", "TD145"}),
        (lambda out, y: F.kl_div(F.log_softmax(out, 1), torch.full_like(out, 0.25), reduction="batchmean"), set()),
        (lambda out, y: F.kl_div(F.log_softmax(out, 1), F.log_softmax(out * 2, 1), reduction="batchmean", log_target=True), set()),
    ],
    ids=["log-softmax-over-batch", "softmax-then-view", "log-of-softmax", "log-softmax-into-ce", "transposed-class-dim", "one-sided-broadcast",
         "n1-vs-n", "bce-logits", "sigmoid-into-ce", "sigmoid-into-bce", "kl-div-on-probabilities", "kl-div-log-target", "kl-div-log-probabilities", "kl-div-log-target-true"],
)
def test_loss_inputs(make_loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], expected: set[str]) -> None:
    assert set(codes(loss_case(make_loss))) == expected


# -- numerics -----------------------------------------------------------------------------------


def gradient_poisons_weights() -> None:
    """sqrt at 0: the loss is finite, its gradient is not, and the next loss is NaN."""
    w = nn.Parameter(torch.zeros(3))
    optimizer = torch.optim.SGD([w], lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        loss = torch.sqrt(w * w).sum()
        loss.backward()
        optimizer.step()


def test_non_finite_gradient_is_caught_before_the_step_applies_it() -> None:
    (finding,) = codes(gradient_poisons_weights)["TD145"]
    assert "before this optimizer step applies them" in finding.message and "the loss is finite" in finding.message
    assert finding.line == gradient_poisons_weights.__code__.co_firstlineno + 8  # optimizer.step()
    assert "epsilon" in finding.hint and "clip" in finding.hint.lower()


def test_finite_training_is_silent() -> None:
    assert codes(loss_case(lambda out, y: F.cross_entropy(out, y))) == {}
