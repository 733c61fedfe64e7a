"""TD488 validation loss rising (overfitting), TD498 validation loss far below the training
loss (info), TD499 class imbalance seen by a plain loss: both sides, in-process, real torch."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

from tests.observe.detectors.conftest import line_of, observing, run_lab
from torchdoctor.observe.detectors.generalisation import ClassImbalance, ValidationGap

HERE = __file__


def labelled(n, seed, noise=0.2, features=32):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    noisy = torch.rand(n, generator=gen) < noise
    return x, torch.where(noisy, torch.randint(0, 4, (n,), generator=gen), y)


def fit(train_samples=64, epochs=20, patience=None, evaluate_every=1, lr=3e-3, hidden=512):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, hidden), nn.ReLU(), nn.Linear(hidden, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loader = DataLoader(TensorDataset(*labelled(train_samples, 0)), batch_size=16, shuffle=True)
    x_val, y_val = labelled(512, 1)
    best, waited = float("inf"), 0
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        if epoch % evaluate_every:
            continue
        with torch.no_grad():
            val = nn.functional.cross_entropy(model(x_val), y_val).item()  # the validation loss
        if patience is not None:
            best, waited = (val, 0) if val < best else (best, waited + 1)
            if waited == patience:
                break


def gap(**kwargs):
    with observing(ValidationGap) as seen:
        fit(**kwargs)
    return seen


def test_a_validation_loss_that_climbs_while_training_falls_is_overfitting_with_its_epoch():
    finding = gap().one("TD488")
    assert finding.line == line_of(HERE, "# the validation loss")
    assert "from epoch 5" in finding.message and finding.severity.value == "warning"
    assert finding.evidence["best_evaluation"] == 5


def test_early_stopping_and_enough_data_are_silent():
    assert gap(patience=2).codes == set()
    assert gap(train_samples=2048, epochs=4).codes == set()


def test_evaluations_without_a_loader_are_counted():
    with observing(ValidationGap) as seen:
        torch.manual_seed(0)
        x, y = labelled(32, 0, features=64)
        x_val, y_val = labelled(256, 1, features=64)
        model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 4))
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        for _ in range(20):
            for i in range(0, 32, 8):
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x[i:i + 8]), y[i:i + 8]).backward()
                optimizer.step()
            with torch.no_grad():
                nn.functional.cross_entropy(model(x_val), y_val)
    assert "from evaluation" in seen.one("TD488").message


def test_a_no_grad_loss_on_the_training_batch_each_step_is_no_evaluation_gap():
    """Logging the loss again under no_grad on the batch just trained on: no gap to report."""
    with observing(ValidationGap) as seen:
        torch.manual_seed(0)
        x, y = labelled(512, 0)
        model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(60):
            xb, yb = x[step % 16 * 32:][:32], y[step % 16 * 32:][:32]
            with torch.no_grad():
                nn.functional.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()
    assert seen.codes == set()


def test_a_validation_loss_far_below_training_with_heavy_dropout_is_info():
    with observing(ValidationGap) as seen:
        torch.manual_seed(0)
        x, y = torch.randn(256, 16), torch.randint(0, 4, (256,))
        x[:, :4] = nn.functional.one_hot(y, 4).float() * 3
        model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.9), nn.Linear(64, 4))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(4):
            model.train()
            for i in range(0, 256, 32):
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x[i:i + 32]), y[i:i + 32]).backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                nn.functional.cross_entropy(model(x[:64]), y[:64])
    assert seen.one("TD498").severity.value == "info"


def skewed(n=2048, share=0.05, seed=0):
    gen = torch.Generator().manual_seed(seed)
    y = (torch.rand(n, generator=gen) < share).long()
    return torch.randn(n, 8, generator=gen) + y[:, None], y


def imbalance(share=0.05, weight=None, sampler=False, steps=12, classes=2, positional=False):
    x, y = skewed(share=share)
    if classes > 2:
        y = torch.randint(0, classes, (len(y),), generator=torch.Generator().manual_seed(1))
    if sampler:
        counts = torch.bincount(y).float()
        draw = WeightedRandomSampler((1 / counts)[y], num_samples=len(y), generator=torch.Generator().manual_seed(0))
        loader = DataLoader(TensorDataset(x, y), batch_size=64, sampler=draw)
    else:
        loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    model = nn.Linear(8, classes)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with observing(ClassImbalance) as seen:
        for step, (xb, yb) in enumerate(loader):
            optimizer.zero_grad()
            if positional:
                loss = nn.functional.cross_entropy(model(xb), yb, weight)
            else:
                loss = nn.functional.cross_entropy(model(xb), yb, weight=weight)  # the loss line
            loss.backward()
            optimizer.step()
            if step + 1 == steps:
                break
    return seen


def test_a_95_5_split_with_a_plain_loss_is_found_at_the_loss():
    finding = imbalance().one("TD499")
    assert finding.line == line_of(HERE, "# the loss line")
    assert "class 0 has 489 (96%)" in finding.message and finding.evidence["counts"] == [489, 23]
    assert "weight=" in finding.hint and "WeightedRandomSampler" in finding.hint


def test_class_weights_a_weighted_sampler_and_balanced_classes_are_silent():
    weight = torch.tensor([1.0, 19.0])
    assert imbalance(weight=weight).codes == set()
    assert imbalance(weight=weight, positional=True).codes == set()
    assert imbalance(sampler=True).codes == set()
    assert imbalance(share=0.3).codes == set()
    assert imbalance(classes=10).codes == set()


def test_too_few_samples_are_not_judged():
    assert imbalance(steps=4).codes == set()


def test_lab_programs_and_their_fixed_twins():
    assert run_lab("60_overfitting_tiny_dataset.py", (ValidationGap,)).one("TD488").line == 57
    assert run_lab("60_overfitting_tiny_dataset.py", (ValidationGap,), fixed=True).codes == set()
    assert run_lab("61_class_imbalance_plain_loss.py", (ClassImbalance,)).one("TD499").line == 49
    assert run_lab("61_class_imbalance_plain_loss.py", (ClassImbalance,), fixed=True).codes == set()
