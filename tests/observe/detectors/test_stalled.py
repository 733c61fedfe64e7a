"""TD494 training-loss-stalled, both sides, in-process: real optimizers on a small learnable
classification task (labels are a function of the inputs), decided by steps and ratios."""

from __future__ import annotations

import torch
from torch import nn

from tests.observe.detectors.conftest import line_of, observing, run_lab
from torchdoctor.observe.detectors.stalled import StalledLoss

HERE = __file__


def data(n=256, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=gen)
    return x, (x[:, 0] + x[:, 1] > 0).long() + 2 * (x[:, 2] > 0).long()


def train(lr=1e-2, steps=60, sign=1.0, misaligned=False, loss="ce", two_optimizers=False, batches=4, drawn=0, draw_seed=1):
    torch.manual_seed(0)
    x, y = data()
    draw = torch.Generator().manual_seed(draw_seed)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)  # the optimizer's line
    other = torch.optim.Adam(model.parameters(), lr=lr) if two_optimizers else None
    size = len(x) // batches
    for step in range(steps):
        i = step % batches
        xb, yb = x[i * size:(i + 1) * size], y[i * size:(i + 1) * size]
        if drawn:  # small random batches: their losses scatter around the curve
            pick = torch.randint(len(x), (drawn,), generator=draw)
            xb, yb = x[pick], y[pick]
        if misaligned:  # fresh samples each step, each with its neighbour's label
            xb, yb = data(size, seed=step + 1)
            yb = yb.roll(1, 0)
        optimizer.zero_grad()
        out = model(xb)
        if loss == "ce":
            value = nn.functional.cross_entropy(out, yb)
        elif loss == "nll":
            value = nn.functional.nll_loss(torch.log_softmax(out, 1), yb)
        else:
            value = nn.functional.mse_loss(out, nn.functional.one_hot(yb, 4).float())
        (sign * value).backward()
        (other if other is not None and step % 2 else optimizer).step()
        with torch.no_grad():  # evaluation losses are not the training loss
            nn.functional.cross_entropy(model(x), y)


def found(**kwargs):
    with observing(StalledLoss) as seen:
        train(**kwargs)
    return seen


def test_a_learning_rate_far_too_small_is_found_at_the_optimizer():
    seen = found(lr=1e-2 * 1e-4)
    finding = seen.one("TD494")
    assert finding.line == line_of(HERE, "# the optimizer's line")
    assert "did not fall" in finding.message and "ln(4)" in finding.message


def test_a_stalled_loss_is_found_through_the_scatter_of_small_batches():
    """Small random batches scatter the loss by several percent: the means of two windows of
    10 can differ by more than 2% on a loss that does not move. A fall that the scatter
    explains is no fall."""
    missed = [seed for seed in range(20) if "TD494" not in found(lr=1e-6, drawn=8, draw_seed=seed).codes]
    assert missed == []
    learning = [seed for seed in range(5) if found(lr=3e-3, drawn=8, draw_seed=seed).codes]
    assert learning == []   # a loss that falls, through the same scatter


def test_lab_program_and_its_fixed_twin():
    assert run_lab("49_learning_rate_far_too_small.py", (StalledLoss,)).one("TD494").line == 37
    assert run_lab("49_learning_rate_far_too_small.py", (StalledLoss,), fixed=True).codes == set()


def test_a_maximised_loss_rises():
    finding = found(sign=-1.0).one("TD494")
    assert "rose" in finding.message and finding.severity.value == "warning"


def test_a_flat_loss_is_reported_only_with_weights_that_barely_move():
    """A learning rate far too small keeps the loss at chance and the weights where they were;
    correct code on random synthetic data (labels that carry no information, the usual smoke
    test) keeps the loss at chance too, but its weights move: silent."""
    flat = found(lr=1e-2 * 1e-4).one("TD494")
    assert flat.severity.value == "warning" and "the weights moved by 0.0" in flat.message
    for lr in (1e-3, 1e-4):
        with observing(StalledLoss) as seen:
            torch.manual_seed(0)
            model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))
            optimizer = torch.optim.Adam(model.parameters(), lr=lr)
            for _ in range(120):
                x, y = torch.randn(32, 20), torch.randint(0, 5, (32,))  # fresh random data, correct code
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
        assert seen.codes == set(), lr


def test_labels_of_other_samples_are_not_told_apart_from_random_labels():
    """Inputs paired with other samples' labels keep the loss at chance while the weights move,
    as random labels do with correct code: not reported (a false alarm costs more than a miss)."""
    assert found(misaligned=True).codes == set()


def test_a_loss_that_stays_worse_than_guessing_is_found_though_the_weights_move():
    """The loss settles far above the chance level, flat, no NaN, while weight decay keeps the
    weights moving: worse than guessing is no curve of correct code, whatever the labels."""
    with observing(StalledLoss) as seen:
        torch.manual_seed(0)
        x, y = data()
        model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.5)
        wrong = 6.0 * nn.functional.one_hot((y + 1) % 4, 4).float()  # confident, and wrong
        for step in range(60):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x) * 0.0 + wrong, y).backward()
            optimizer.step()
    finding = seen.one("TD494")
    assert "times the chance level, worse than guessing" in finding.message


def test_training_that_learns_is_silent():
    assert found().codes == set()
    assert found(loss="nll").codes == set()
    assert found(lr=1e-3, steps=200).codes == set()     # slow but moving


def test_not_judged_without_enough_steps_other_losses_or_two_optimizers():
    assert found(lr=1e-6, steps=30).codes == set()
    assert found(lr=1e-6, loss="mse").codes == set()
    assert found(lr=1e-6, two_optimizers=True).codes == set()


def test_observing_reads_nothing_per_step():
    """The values are kept as detached references until a checkpoint: the run's own loss
    tensors keep their graph (backward still works after the hook)."""
    with observing(StalledLoss):
        model = nn.Linear(4, 3)
        out = nn.functional.cross_entropy(model(torch.randn(5, 4)), torch.tensor([0, 1, 2, 0, 1]))
        assert out.requires_grad and out.grad_fn is not None
        out.backward()
        assert model.weight.grad is not None
