"""TD496 loss-spike, both sides: a corrupted sample's batch is found with its indices (and the
dataset's ids), a spike the training gets over is info, noisy correct training is silent, and
the batch written by `--save-bad-batches` computes the same loss again on the saved weights."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset

import torchdoctor
from torchdoctor.core.finding import Severity
from torchdoctor.observe.detectors import spikes

LAB = Path(__file__).resolve().parents[3] / "examples" / "lab"


def run(train: Callable[[], object]) -> list[torchdoctor.Finding]:
    torch.manual_seed(0)
    with torchdoctor.watch() as watched:
        train()
    return [f for f in watched.findings if f.rule == "TD496"]


def regression(corrupt: float | None, *, clip: bool = False, epochs: int = 3, lr: float = 0.05) -> Callable[[], None]:
    def train() -> None:
        x = torch.randn(512, 8, generator=torch.Generator().manual_seed(1))
        y = x.sum(dim=1, keepdim=True)
        if corrupt is not None:
            y[300] = corrupt
        loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(2))
        model = nn.Linear(8, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        for _ in range(epochs):
            for xb, yb in loader:
                optimizer.zero_grad()
                loss = nn.functional.mse_loss(model(xb), yb)
                loss.backward()
                if clip:
                    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()

    return train


def test_a_corrupted_target_is_a_spike_with_its_batch_and_sample() -> None:
    found = run(regression(5000.0))
    assert len(found) == 1
    finding = found[0]
    assert finding.severity == Severity.WARNING
    assert 300 in finding.evidence["indices"] and len(finding.evidence["indices"]) == 16
    assert "sample 300" in finding.message and "did not recover" in finding.message
    assert "loss.backward()" in Path(finding.file or "").read_text().splitlines()[(finding.line or 1) - 1]


def test_a_spike_the_training_gets_over_is_info() -> None:
    """Clipped gradients: the bad batch costs one step, and the loss comes back (every epoch)."""
    found = run(regression(60.0, clip=True))
    assert len(found) == 3 and all(f.severity == Severity.INFO for f in found)
    assert all(300 in f.evidence["indices"] and "recovered" in f.message for f in found)


def test_noisy_correct_training_has_no_spike() -> None:
    """Small batches of a classification scatter their losses widely: no spike in them."""

    def train() -> None:
        x = torch.randn(2048, 16)
        y = (x[:, :4].sum(dim=1) + 0.8 * torch.randn(2048) > 0).long() + (x[:, 4] > 1).long()
        loader = DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True)
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 3))
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()

    assert run(train) == []
    assert run(regression(None)) == []


def test_a_spike_that_turns_into_inf_is_a_warning() -> None:
    """An exponential output: the weights the bad batch throws off overflow the next forward."""

    def train() -> None:
        x = torch.randn(512, 8, generator=torch.Generator().manual_seed(1))
        y = (x.sum(dim=1, keepdim=True) / 4).exp()
        y[300] = 1e3
        loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(2))
        model = nn.Linear(8, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        for _ in range(2):
            for xb, yb in loader:
                optimizer.zero_grad()
                nn.functional.mse_loss(model(xb).exp(), yb).backward()
                optimizer.step()

    found = run(train)
    assert len(found) == 1 and found[0].severity == Severity.WARNING
    assert "not finite 2 losses later" in found[0].message and 300 in found[0].evidence["indices"]


class Records(Dataset[dict[str, torch.Tensor]]):
    """Records that carry their own ids; record 'id 7300' has a corrupted feature."""

    def __init__(self) -> None:
        self.x = torch.randn(256, 4, generator=torch.Generator().manual_seed(3))
        self.x[77, 1] = 4e4

    def __len__(self) -> int:
        return 256

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"id": torch.tensor(7223 + i), "x": self.x[i], "y": self.x[i].sum(0, keepdim=True) / 4}


def test_the_dataset_ids_and_the_standing_out_sample_are_named() -> None:
    def train() -> None:
        loader = DataLoader(Records(), batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(4))
        model = nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
        for _ in range(2):
            for batch in loader:
                optimizer.zero_grad()
                nn.functional.mse_loss(model(batch["x"]), batch["y"]).backward()
                optimizer.step()

    found = run(train)
    assert found, "no spike"
    assert 7300 in found[0].evidence["ids"] and 77 in found[0].evidence["indices"]
    assert "sample 77" in found[0].message and "`batch['x']`" in found[0].message


def test_the_saved_batch_reproduces_the_spike_on_the_saved_weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lab's corrupted sample (55): the file holds the batch and the weights of that moment;
    the model built as the program builds it, loaded with them, computes the same loss."""
    monkeypatch.setenv(spikes.ENV_SAVE, str(tmp_path / "bad"))
    path = LAB / "55_corrupted_sample_spikes_loss.py"
    spec = importlib.util.spec_from_file_location("lab_55_saved", path)
    assert spec is not None and spec.loader is not None
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    torch.set_num_threads(1)
    with torchdoctor.watch() as watched:
        program.train(steps=40)
    finding = next(f for f in watched.findings if f.rule == "TD496")
    files = sorted((tmp_path / "bad").glob("spike-step*.pt"))
    assert [str(p) for p in files] == [finding.evidence["saved"]]
    saved = torch.load(files[0], weights_only=False)
    assert saved["step"] == finding.evidence["step"] and 371 in saved["indices"]
    setup = program.make()
    model, loss_fn = setup["model"], setup["loss_fn"]
    model.load_state_dict(saved["models"]["Regressor"])
    x, y = saved["batch"]
    with torch.no_grad():
        loss = float(loss_fn(model(x), y))
    assert math.isclose(loss, saved["loss"], rel_tol=1e-5)
    assert loss > 1000 * saved["median"]
    # without the corrupted sample, the same weights give an ordinary loss
    keep = torch.tensor([i != 371 for i in saved["indices"]])
    with torch.no_grad():
        assert float(loss_fn(model(x[keep]), y[keep])) < 10 * saved["median"]
