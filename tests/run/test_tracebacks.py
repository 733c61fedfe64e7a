"""The traceback of a script that stops under `torchdoctor run` reads as under plain python:
the same frames, without the stand-ins, hooks and instruments observation put in its calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.run.conftest import python, torchdoctor_run

#: one way of stopping per argument; each passes through a different part of torchdoctor
SCRIPT = """\
import os
import signal
import sys

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Interrupted(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while backward() runs
        for _ in range(1000):
            pass
        return grad


class Samples(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        if index == 3:
            raise KeyError(f"no sample {index}")
        return torch.randn(4), torch.randn(1)


model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
how = sys.argv[1]
for x, y in DataLoader(Samples(), batch_size=2):
    optimizer.zero_grad()
    if how == "ctrl-c":
        loss = Interrupted.apply(model(x)).pow(2).mean()
    elif how == "loss":
        loss = F.cross_entropy(model(x), torch.tensor([3, 4]))
    else:
        loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "status"),
    [("ctrl-c", 130), ("loss", 1), ("data", 1)],  # autograd's stand-in; a patched function; the DataLoader's instrument
)
def test_the_traceback_has_the_frames_plain_python_shows(how: str, status: int, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    plain = python(str(script), how, cwd=tmp_path)
    ran = torchdoctor_run(str(script), how, cwd=tmp_path)
    assert plain.returncode == (status if status < 128 else 128 - status)  # subprocess: -2 for SIGINT
    assert ran.report["meta"]["exit_status"] == status
    shown, _, _report = ran.stderr.partition("\ntorchdoctor run ")  # the report follows the script's stderr
    assert "Traceback (most recent call last)" in plain.stderr
    assert shown + "\n" == plain.stderr
