"""TD495 learning-rate-too-large, both sides, in-process: real optimizers, the size of their
first steps against the weights' own, in ratios (no timing)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.observe.detectors.conftest import line_of, observing, run_lab
from torchdoctor.observe.detectors.step_size import StepSize

HERE = __file__


def classifier(width=256, inputs=64):
    return nn.Sequential(nn.Linear(inputs, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 4))


def train(model, optimizer, steps=10, inputs=64, clip=None):
    gen = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x = torch.randn(64, inputs, generator=gen)
        y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()


def found(kind, model=None, steps=10, inputs=64, clip=None, **settings):
    torch.manual_seed(0)
    model = model if model is not None else classifier()
    with observing(StepSize) as seen:
        optimizer = kind(model.parameters(), **settings)  # the optimizer's line
        train(model, optimizer, steps=steps, inputs=inputs, clip=clip)
    return seen


@pytest.mark.parametrize(("kind", "lr"), [(torch.optim.Adam, 0.1), (torch.optim.AdamW, 0.3), (torch.optim.RMSprop, 0.05),
                                          (torch.optim.SGD, 50.0)])
def test_steps_larger_than_the_weights_are_found_at_the_optimizer(kind, lr):
    finding = found(kind, lr=lr).one("TD495")
    assert finding.line == line_of(HERE, "# the optimizer's line")
    assert "times their initial size" in finding.message and "learning rate" in finding.message


@pytest.mark.parametrize(("kind", "settings"), [(torch.optim.Adam, {"lr": 1e-3}), (torch.optim.AdamW, {"lr": 3e-3}),
                                                (torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}), (torch.optim.RMSprop, {"lr": 1e-3}),
                                                (torch.optim.Adadelta, {"lr": 1.0}), (torch.optim.Adagrad, {"lr": 1e-2})])
def test_usual_learning_rates_are_silent(kind, settings):
    assert found(kind, **settings).codes == set()


def test_a_large_rate_on_wide_weights_of_a_small_input_layer_is_silent():
    """Adam at 0.03 on a 4-input layer and 128-unit heads (pytorch/examples' actor-critic): the
    closest correct program measured, a third of the threshold."""
    model = nn.Sequential(nn.Linear(4, 128), nn.ReLU(), nn.Linear(128, 4))
    assert found(torch.optim.Adam, lr=3e-2, model=model, inputs=4).codes == set()


def test_sgd_at_a_high_rate_with_gradient_clipping_is_silent():
    """word_language_model's recipe: SGD at 20 with the gradient norm clipped to 0.25."""
    assert found(torch.optim.SGD, lr=20.0, clip=0.25).codes == set()


def test_weights_that_start_at_zero_are_not_compared_with_their_size():
    torch.manual_seed(0)
    model = classifier()
    for layer in (model[2], model[4]):
        nn.init.zeros_(layer.weight)  # zero-initialised residual or output projections
    assert found(torch.optim.Adam, lr=1e-3, model=model).codes == set()


def test_toy_layers_have_no_scale_to_judge():
    model = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 4))  # XOR-sized: under 64 weights each
    assert found(torch.optim.Adam, lr=0.5, model=model, inputs=2).codes == set()


def test_closure_optimizers_and_optimizers_outside_torch_optim_are_not_judged():
    class SignDescent(torch.optim.Optimizer):
        def __init__(self, params, lr):
            super().__init__(params, {"lr": lr})

        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.add_(p.grad.sign(), alpha=-group["lr"])

    assert found(SignDescent, lr=0.5).codes == set()
    torch.manual_seed(0)
    model = classifier()
    with observing(StepSize) as seen:
        optimizer = torch.optim.LBFGS(model.parameters(), lr=1.0)
        x, y = torch.randn(64, 64), torch.randint(0, 4, (64,))

        def closure():
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            return loss

        for _ in range(4):
            optimizer.step(closure)
    assert seen.codes == set()


def test_a_run_shorter_than_the_measure_is_not_judged():
    assert found(torch.optim.Adam, lr=0.5, steps=2).codes == set()


def test_each_optimizer_is_judged_on_its_own():
    """A GAN: the discriminator's rate is far too large, the generator's is not."""
    torch.manual_seed(0)
    generator, discriminator = classifier(), classifier()
    with observing(StepSize) as seen:
        g_opt = torch.optim.Adam(generator.parameters(), lr=2e-4)
        d_opt = torch.optim.Adam(discriminator.parameters(), lr=0.2)  # the discriminator's line
        for _ in range(4):
            x = torch.randn(64, 64)
            for model, optimizer in ((generator, g_opt), (discriminator, d_opt)):
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), (x[:, 0] > 0).long()).backward()
                optimizer.step()
    assert seen.one("TD495").line == line_of(HERE, "# the discriminator's line")


def test_lab_program_and_its_fixed_twin():
    assert run_lab("52_adam_learning_rate_too_large.py", (StepSize,)).one("TD495").line == line_of(
        run_lab.__globals__["LAB"] / "52_adam_learning_rate_too_large.py", "torch.optim.Adam(")
    assert run_lab("52_adam_learning_rate_too_large.py", (StepSize,), fixed=True).codes == set()


def full_batch(inputs: int, lr: float, steps: int) -> object:
    """A wide linear classifier on one fixed, separable batch: Adam's first steps are larger
    than the weights' initial size (1.3x at 1,024 inputs and lr=0.03), and the loss falls at once."""
    torch.manual_seed(0)
    x = torch.randn(512, inputs)
    y = (x @ torch.randn(inputs, 3)).argmax(1)
    model = nn.Linear(inputs, 3)
    with observing(StepSize) as seen:
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)  # the full-batch optimizer's line
        for _ in range(steps):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    return seen


@pytest.mark.parametrize("lr", [0.03, 0.3])
def test_large_steps_on_a_loss_that_falls_are_silent(lr):
    assert full_batch(1024, lr, steps=10).codes == set()


def test_the_finding_says_what_the_loss_did():
    finding = found(torch.optim.Adam, lr=0.1).one("TD495")
    assert "the loss did not fall" in finding.message and "at the first step" in finding.message


def test_a_loss_that_turns_non_finite_is_the_evidence():
    finding = found(torch.optim.SGD, lr=50.0, steps=8).one("TD495")
    assert "non-finite" in finding.message


def test_a_run_that_stops_after_the_measured_steps_has_no_evidence_and_is_silent():
    assert found(torch.optim.Adam, lr=0.1, steps=3).codes == set()


def test_a_run_shorter_than_the_evidence_window_is_judged_at_its_end():
    assert found(torch.optim.Adam, lr=0.1, steps=4).codes == {"TD495"}
