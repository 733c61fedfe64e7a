"""TD145 for a gradient made non-finite by the code between the model's output and the loss
(issue 29): the op whose backward made it is named at its line, with the values it was given,
wherever it ran (a plain function, an nn.Module loss, a lambda, a custom autograd.Function, the
training loop itself); the same code with an epsilon is silent. In-process, real torch."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.observe.detectors.conftest import line_of, observing
from torchdoctor.observe.detectors.numerics import NonFiniteLoss

HERE = __file__


@pytest.fixture(autouse=True)
def no_compile_before() -> None:
    """Each test is a fresh program: a torch.compile made by an earlier test of the process
    would turn the loss code's trace off (see the last test)."""
    torch._dynamo.reset()
EPS = 0.0  # set per test through `spread`'s argument


def spread_loss(z: torch.Tensor, eps: float) -> torch.Tensor:
    diff = z[:, None, :] - z[None, :, :]
    dist = (diff.pow(2).sum(-1) + eps).sqrt()  # plain function
    return -dist.mean()


class SpreadLoss(nn.Module):
    def __init__(self, eps: float) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        dist = torch.sqrt((z[:, None, :] - z[None, :, :]).pow(2).sum(-1) + self.eps)  # loss module
        return -dist.mean()


class Distance(torch.autograd.Function):
    @staticmethod
    def forward(ctx, squared: torch.Tensor, eps: float) -> torch.Tensor:  # type: ignore[no-untyped-def, override]
        dist = (squared + eps).sqrt()  # custom Function
        ctx.save_for_backward(dist)
        return dist

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:  # type: ignore[no-untyped-def, override]
        (dist,) = ctx.saved_tensors
        return grad / (2 * dist), None


def placed(where: str) -> Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]:
    """The loss of an embedding `z` (and targets `y`), with the sqrt written in `where`."""
    if where == "function":
        return lambda z, y, eps: spread_loss(z, eps)
    if where == "module":
        return lambda z, y, eps: SpreadLoss(eps)(z)
    if where == "lambda":
        distance = lambda d, eps: (d.pow(2).sum(-1) + eps) ** 0.5  # noqa: E731 - lambda
        return lambda z, y, eps: -distance(z[:, None] - z[None], eps).mean()
    if where == "function-class":
        return lambda z, y, eps: -Distance.apply((z[:, None] - z[None]).pow(2).sum(-1), eps).mean()
    raise ValueError(where)


def train(loss_of: Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor] | None, eps: float, steps: int = 4, loop: str = "") -> None:
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = torch.optim.SGD(encoder.parameters(), lr=0.01)
    x, y = torch.randn(32, 8), torch.randn(32)
    for _ in range(steps):
        optimizer.zero_grad()
        z = encoder(x)
        if loop == "acos":  # the angle of each row with itself, in the training loop: s / s is exactly 1 on every build
            square = (z * z).sum(-1)
            cos = (square / square).clamp(-1 + eps, 1 - eps) if eps else square / square  # (a clamp at exactly ±1 passes no gradient on torch 2.14)
            loss = F.mse_loss(torch.acos(cos), torch.full_like(cos, 1.0))  # training loop acos
        elif loop == "norm":  # unit vectors, the padding rows (0) left out by `where`, in the training loop
            padded = z * (torch.arange(32) >= 4)[:, None]
            norm = torch.linalg.vector_norm(padded, dim=-1, keepdim=True)
            unit = torch.where(norm > 0, padded / norm.clamp_min(eps), 0.0)  # training loop division
            loss = F.mse_loss(unit, torch.ones_like(unit))
        else:
            assert loss_of is not None
            loss = loss_of(z, y, eps)
        loss.backward()
        optimizer.step()


@pytest.mark.parametrize("where, marker", [
    ("function", "# plain function"),
    ("module", "# loss module"),
    ("lambda", "# noqa: E731 - lambda"),
    ("function-class", "# custom Function"),
])
def test_a_sqrt_at_zero_outside_the_model_is_named_at_its_line(where: str, marker: str) -> None:
    with observing(NonFiniteLoss) as observed:
        train(placed(where), eps=0.0)
    finding = observed.one("TD145")
    assert finding.file == HERE and finding.line == line_of(HERE, marker)
    assert "at step 1 (the loss is finite)" in finding.message
    assert "first produced by the backward of `" in finding.message
    assert "holds 32 zero(s)" in finding.message and "in [0, " in finding.message  # the diagonal of the distances
    assert "infinite at 0" in finding.message
    assert "1e-8" in finding.hint and "cdist" in finding.hint
    if where == "function-class":
        assert "custom autograd.Function `Distance`" in finding.message and "Distance.backward" in finding.hint


@pytest.mark.parametrize("where", ["function", "module", "lambda", "function-class"])
def test_the_same_distance_with_an_epsilon_is_silent(where: str) -> None:
    with observing(NonFiniteLoss) as observed:
        train(placed(where), eps=1e-8)
    assert observed.codes == set()


def test_an_acos_at_one_in_the_training_loop_is_named() -> None:
    with observing(NonFiniteLoss) as observed:
        train(None, eps=0.0, loop="acos")
    finding = observed.one("TD145")
    assert finding.line == line_of(HERE, "# training loop acos")
    assert "backward of `acos`" in finding.message and "at -1 or 1" in finding.message and "clamp(-1 + 1e-6" in finding.hint
    with observing(NonFiniteLoss) as observed:
        train(None, eps=1e-6, loop="acos")
    assert observed.codes == set()


def test_a_division_by_a_zero_masked_out_by_where_is_named() -> None:
    """`torch.where` keeps the forward finite; the division's gradient at 0 is not."""
    with observing(NonFiniteLoss) as observed:
        train(None, eps=0.0, loop="norm")
    finding = observed.one("TD145")
    assert finding.line == line_of(HERE, "# training loop division")
    assert "backward of `div`" in finding.message and "its divisor holds 4 zero(s)" in finding.message
    assert "F.normalize" in finding.hint
    with observing(NonFiniteLoss) as observed:
        train(None, eps=1e-8, loop="norm")
    assert observed.codes == set()


def test_a_gradient_past_the_first_steps_says_where_it_looked() -> None:
    """After the warm-up nothing is traced: the finding says the model was replayed without it."""

    calls = []

    def late(z: torch.Tensor, y: torch.Tensor, eps: float) -> torch.Tensor:
        calls.append(1)
        target = z.sum(-1).detach() + (0.0 if len(calls) == 6 else 1.0)  # met exactly at step 6
        return (z.sum(-1) - target).pow(2).sqrt().mean()

    with observing(NonFiniteLoss) as observed:
        train(late, eps=0.0, steps=8)
    finding = observed.one("TD145")
    assert "at step 6" in finding.message and "replayed, does not make them" in finding.message


class Prototypes(nn.Module):
    """Distances to prototypes copied from the batch: the model's own sqrt at 0."""

    def __init__(self, samples: torch.Tensor) -> None:
        super().__init__()
        self.prototypes, self.head = nn.Parameter(samples.clone()), nn.Linear(len(samples), 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(-torch.sqrt(((x[:, None] - self.prototypes[None]) ** 2).sum(-1)))  # model sqrt


def test_an_op_whose_gradient_reaches_no_parameter_is_not_blamed() -> None:
    """The loss code's sqrt at 0 sends its NaN to the input only; the model's sqrt poisons the
    parameters: the finding is the model's."""
    torch.manual_seed(0)
    x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
    model = Prototypes(x[:4])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with observing(NonFiniteLoss) as observed:
        for _ in range(2):
            optimizer.zero_grad()
            out = model(x)
            probe = x.clone().requires_grad_(True)
            penalty = (probe - x).pow(2).sum(-1).sqrt().mean()  # input-only sqrt at 0
            loss = F.cross_entropy(out, y) + penalty
            loss.backward()
            optimizer.step()
    finding = observed.one("TD145")
    assert finding.line == line_of(HERE, "# model sqrt")


def test_after_torch_compile_ran_in_the_process_the_gradient_is_still_explained() -> None:
    """A `watch()` block after torch.compile ran: the loss code is not traced (dynamo would trace
    the trace), and the replay that stands in fails on nothing (it once compared two tensors
    with `==` and stepped aside)."""
    compiled = torch.compile(lambda t: t * 2, backend="eager")
    assert compiled(torch.ones(2)).sum().item() == 4
    with observing(NonFiniteLoss) as observed:  # fails on any TD006 (a detector that stepped aside)
        train(None, eps=0.0, loop="norm")
    assert "TD145" in observed.codes
