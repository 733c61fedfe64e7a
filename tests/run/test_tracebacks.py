"""The traceback of a script that stops under `torchdoctor run` reads as under plain python:
the same frames, without the stand-ins, hooks and instruments observation put in its calls."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest

from tests.run.conftest import python, torchdoctor_run
from torchdoctor.observe import tracebacks
from torchdoctor.observe.faults import Faults
from torchdoctor.observe.patching import call_in_mode

#: one way of stopping per argument; each passes through a different part of torchdoctor
SCRIPT = """\
import logging
import os
import signal
import sys
import threading
import traceback

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


def train():
    for x, y in DataLoader(Samples(), batch_size=2, num_workers=1 if how == "worker" else 0):
        optimizer.zero_grad()
        if how == "ctrl-c":
            loss = Interrupted.apply(model(x)).pow(2).mean()
        elif how in ("loss", "thread"):
            loss = F.cross_entropy(model(x), torch.tensor([3, 4]))
        elif how == "caught":
            try:
                loss = F.cross_entropy(model(x), torch.tensor([3, 4]))
            except IndexError:
                traceback.print_exc()
                logging.exception("this batch is skipped")
                continue
        else:
            loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()


if how == "thread":
    worker = threading.Thread(target=train)
    worker.start()
    worker.join()
else:
    train()
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "status"),
    [
        ("ctrl-c", 130),  # autograd's stand-in
        ("loss", 1),  # a patched function
        ("data", 1),  # the DataLoader's instrument
        ("caught", 1),  # printed by the script itself: traceback.print_exc(), logging.exception()
        ("thread", 0),  # uncaught in another thread (threading.excepthook): the main thread exits 0
        ("worker", 1),  # the text a DataLoader worker sends back (its fetch is observed)
    ],
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


def test_a_traceback_the_script_formats_leaves_out_torchdoctor_frames_and_torchdoctor_keeps_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(traceback.TracebackException, "__init__", traceback.TracebackException.__init__)  # put back after
    tracebacks.format_without_own_frames()

    def fails() -> None:
        raise ValueError("in the user's code")

    try:
        call_in_mode(fails, (), {})  # a frame of torchdoctor's, then a stand-in that looks like this line
    except ValueError as exc:
        raised = exc
    as_the_script_prints_it = "".join(traceback.format_exception(type(raised), raised, raised.__traceback__))
    assert "src/torchdoctor" not in as_the_script_prints_it
    assert as_the_script_prints_it.count("test_tracebacks.py") == 2  # this test, then fails(): no stand-in between
    faults = Faults()
    faults.add("a detector", raised)
    assert "torchdoctor/observe/patching.py" in faults.seen[0].traceback  # torchdoctor's own record keeps every frame
