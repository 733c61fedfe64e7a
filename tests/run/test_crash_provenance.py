"""Crashes explained at the line that made the bad value: where a tensor became float64, where
class labels became float or were shifted out of range; the crash's own line stays in the message.
When the making cannot be read for certain, the finding stays at the crash line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from tests.run.conftest import torchdoctor_run
from tests.run.test_crash import explained, line_of

HERE = "tests/run/test_crash_provenance.py"


class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def test_float64_made_in_the_training_loop_and_crashing_in_the_model() -> None:
    model, device = Small(), torch.device("cpu")
    loader = DataLoader(TensorDataset(torch.randn(8, 1, 6, 6), torch.arange(8)), batch_size=4)

    def epoch() -> None:
        for data, target in loader:
            data, target = data.double().to(device), target.to(device)
            model(data)

    finding = explained(epoch)
    assert finding.rule == "TD411" and finding.line == line_of("data.double()", epoch)
    assert "made float64 at" in finding.message and "(`data.double()`)" in finding.message
    assert f"crashes at {HERE}:{line_of('return self.conv(x)', Small)}" in finding.message
    assert "torch.float32" in finding.hint


def test_conversion_in_the_argument_of_the_model_call() -> None:
    model, device = Small(), "cpu"

    def double() -> None:
        images = torch.randn(4, 1, 6, 6)
        model(images.double())

    def to_dtype() -> None:
        images = torch.randn(4, 1, 6, 6)
        model(images.to(torch.float64))

    def to_device_and_dtype() -> None:
        images = torch.randn(4, 1, 6, 6)
        model(x=images.to(device, dtype=torch.float64))

    def type_of_tensor() -> None:
        images = torch.randn(4, 1, 6, 6)
        model(images.type(torch.DoubleTensor))

    def through_moves_and_views() -> None:
        images = torch.randn(4, 36)
        model(images.double().to(device).view(4, 1, 6, 6))

    for case, made in ((double, "images.double()"), (to_dtype, "images.to(torch.float64)"),
                       (to_device_and_dtype, "images.to(device, dtype=torch.float64)"),
                       (type_of_tensor, "images.type(torch.DoubleTensor)"), (through_moves_and_views, "images.double()")):
        finding = explained(case)
        assert finding.rule == "TD411" and finding.line == line_of("model(", case), case.__name__
        assert f"(`{made}`)" in finding.message, finding.message


class Reshaping(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(36, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(-1, 36)
        return self.fc(x)


def test_the_value_is_followed_through_names_that_keep_it() -> None:
    model = Reshaping()

    def argument_reshaped_in_forward() -> None:
        images = torch.randn(4, 1, 6, 6)
        model(images.double())

    def caller_name_viewed_in_the_call() -> None:
        batch = torch.randn(4, 36).double()
        model(batch.view(4, 6, 6))

    assert explained(argument_reshaped_in_forward).line == line_of("model(images.double())", argument_reshaped_in_forward)
    assert explained(caller_name_viewed_in_the_call).line == line_of(".double()", caller_name_viewed_in_the_call)


def test_float64_from_numpy_and_from_a_factory() -> None:
    model = nn.Linear(4, 2)

    def from_numpy() -> None:
        features = np.random.default_rng(0).normal(size=(8, 4))
        x = torch.from_numpy(features)
        model(x)

    def factory() -> None:
        x = torch.zeros(8, 4, dtype=torch.float64)
        model(x)

    assert explained(from_numpy).line == line_of("torch.from_numpy", from_numpy)
    assert explained(factory).line == line_of("torch.zeros", factory)


def test_rnn_dtype_value_error_is_a_dtype_mismatch_at_its_origin() -> None:
    lstm = nn.LSTM(4, 8)

    def step() -> None:
        seq = torch.randn(5, 2, 4).double()
        lstm(seq)

    finding = explained(step)
    assert finding.rule == "TD411" and finding.line == line_of("seq = torch.randn", step)
    assert "`seq` is float64" in finding.message


def test_untraceable_or_unsure_origins_stay_at_the_crash_line() -> None:
    model = nn.Linear(4, 2)
    loader = DataLoader(TensorDataset(torch.randn(8, 4, dtype=torch.float64)), batch_size=4)
    reference = torch.zeros(1, dtype=torch.float64)

    def from_the_loader() -> None:
        for (x,) in loader:
            x = x.to("cpu")
            model(x)

    def on_one_branch(flag: bool = True) -> None:
        x = torch.randn(8, 4)
        if flag:
            x = x.double()
        model(x)

    def like_another_tensor() -> None:
        x = torch.randn(8, 4).to(reference)
        model(x)

    def rebound_later_in_the_loop() -> None:
        x = torch.randn(8, 4).double()
        for _ in range(2):
            model(x)
            x = torch.randn(8, 4).double()

    for case, crash_line in ((from_the_loader, "model(x)"), (on_one_branch, "model(x)"),
                             (like_another_tensor, "model(x)"), (rebound_later_in_the_loop, "model(x)")):
        finding = explained(case)
        assert finding.rule == "TD411" and finding.line == line_of(crash_line, case), case.__name__
        assert "made float64" not in finding.message


def test_float_class_targets_point_at_the_conversion() -> None:
    logits = torch.randn(4, 3)

    def step() -> None:
        labels = torch.tensor([0, 1, 2, 1])
        labels = labels.float()
        F.cross_entropy(logits, labels)

    finding = explained(step)
    assert finding.rule == "TD106" and finding.line == line_of("labels.float()", step)
    assert f"crashes at {HERE}:{line_of('F.cross_entropy', step)}" in finding.message


def test_float_class_targets_from_the_data_stay_at_the_loss() -> None:
    logits = torch.randn(4, 3)
    labels = torch.tensor([0.0, 1.0, 2.0, 1.0])

    def step() -> None:
        F.cross_entropy(logits, labels)

    finding = explained(step)
    assert finding.rule == "TD106" and finding.line == line_of("F.cross_entropy", step)


def test_labels_shifted_out_of_range_point_at_the_arithmetic() -> None:
    logits = torch.randn(4, 3)

    def shifted() -> None:
        labels = torch.tensor([0, 1, 2, 1])
        labels = (labels + 1).long()
        F.cross_entropy(logits, labels)

    def as_given() -> None:
        labels = torch.tensor([0, 1, 3, 1])
        F.cross_entropy(logits, labels)

    finding = explained(shifted)
    assert finding.rule == "TD105" and finding.line == line_of("labels + 1", shifted)
    assert "labels shifted at" in finding.message and "(`(labels + 1).long()`)" not in finding.message
    finding = explained(as_given)
    assert finding.rule == "TD105" and finding.line == line_of("F.cross_entropy", as_given)


class Recurrent(nn.Module):
    def __init__(self, kind: type[nn.RNNBase], batch_first: bool = False) -> None:
        super().__init__()
        self.rnn = kind(4, 8, 2, batch_first=batch_first)
        self.lstm = kind is nn.LSTM

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h0 = torch.zeros(2, x.size(0), 8)
        out, _ = self.rnn(x, (h0, torch.zeros_like(h0)) if self.lstm else h0)
        return out


def test_rnn_without_batch_first_given_a_hidden_state_for_dim_0_points_at_the_layer() -> None:
    for kind in (nn.LSTM, nn.GRU, nn.RNN):
        model = Recurrent(kind)
        finding = explained(lambda model=model: model(torch.randn(6, 5, 4)))  # (batch=6, seq=5, features)
        assert finding.rule == "TD302" and finding.line == line_of("self.rnn = kind(", Recurrent), kind
        assert "without batch_first=True" in finding.message and "batch_first=True" in finding.hint
        assert f"crashes at {HERE}:{line_of('out, _ = self.rnn', Recurrent)}" in finding.message


def test_a_hidden_state_wrong_for_other_reasons_is_not_a_layout_bug() -> None:
    short_last_batch = Recurrent(nn.LSTM, batch_first=True)
    h0 = torch.zeros(2, 8, 8)
    bare = nn.GRU(4, 8, 2)
    for action in (
        lambda: short_last_batch.rnn(torch.randn(6, 5, 4), (h0, h0)),  # a hidden state kept for batch 8
        lambda: bare(torch.randn(6, 6, 4), torch.zeros(2, 8, 8)),  # seq and batch of one size: no layout to tell
    ):
        finding = explained(action)  # TD417's hidden state made for another batch, not the layout
        assert finding.rule == "TD417" and "made for a batch of 8 with an input batch of 6" in finding.message
    assert explained(lambda: bare(torch.randn(6, 5, 4), torch.zeros(2, 6, 9))).rule == "TD001"  # the hidden size wrong
    # the correct twin runs
    assert Recurrent(nn.LSTM, batch_first=True)(torch.randn(6, 5, 4)).shape == (6, 5, 8)


MODEL = '''\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.rnn = nn.GRU(6, 8, batch_first=True)

    def forward(self, x):
        x = self.conv1(x)
        out, _ = self.rnn(x.flatten(1, 2))
        return out[:, -1]
'''

TRAIN = '''\
import torch
from torch.utils.data import DataLoader, TensorDataset

from model import Net

device = torch.device("cpu")
loader = DataLoader(TensorDataset(torch.randn(16, 1, 8, 8), torch.arange(16) % 8), batch_size=4)
model = Net().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for data, target in loader:
    data, target = {batch}
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(data), target)
    loss.backward()
    optimizer.step()
'''


@pytest.mark.slow
@pytest.mark.parametrize(("batch", "expected"), [
    ("data.double().to(device), target.to(device)", ("TD411", "train.py", 11)),  # made float64 in the loop
    ("data.to(device), target.to(device)", None),  # the correct twin
])
def test_torchdoctor_run_points_at_the_line_that_made_the_batch_float64(write, tmp_path: Path, batch: str,
                                                                         expected: tuple[str, str, int] | None) -> None:
    write("model.py", MODEL)
    ran = torchdoctor_run(str(write("train.py", TRAIN.format(batch=batch))), cwd=tmp_path)
    crashes = [(f["rule"], f["file"], f["line"]) for f in ran.report["findings"] if f["severity"] == "error"]
    if expected is None:
        assert ran.returncode == 0 and crashes == []
        return
    assert crashes == [expected]
    assert "(`data.double()`), crashes at model.py:12" in ran.finding("TD411")["message"]
