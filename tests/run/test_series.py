"""The per-step series (observe/instruments/series.py): what they hold is what the script computed."""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import torchdoctor
from tests.run.conftest import torchdoctor_run
from torchdoctor.observe.instruments.series import LAYER_ROWS, MANUAL_AFTER, UPDATE_ROWS, UPDATE_STRIDE
from torchdoctor.observe.instruments.tables import Table


def column(series: dict, name: str, col: str) -> dict[int, float]:
    table = series[name]
    i = table["columns"].index(col)
    return {step: row[i] for step, row in zip(table["steps"], table["values"]) if row[i] is not None}


def test_a_full_table_keeps_every_other_row_and_samples_half_as_often() -> None:
    table = Table(capacity=4)
    for step in range(1, 12):
        table.add(step, {"a": float(step)})
    assert table.stride == 4
    assert table.steps == [4, 8]  # 1-4 filled it; at 5: 2, 4 kept (stride 2); at 9: 4, 8 (stride 4)
    assert [r[0] for r in table.rows] == [4.0, 8.0]
    assert not table.due(9) and table.due(12)


def test_columns_that_appear_later_are_null_before() -> None:
    table = Table()
    table.add(1, {"a": 1.0})
    table.add(2, {"a": 2.0, "b": float("nan")})
    table.add(2, {"b": 3.0})  # the same step again: the same row
    assert table.to_dict(read_device=True)["values"] == [[1.0, None], [2.0, 3.0]]
    table.add(3, {"a": float("inf")})
    assert table.to_dict(read_device=True)["values"][-1] == [None, None]  # JSON has no NaN / Inf


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(6, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.body(x)))


def test_loss_lr_and_gradient_norms_are_those_of_the_run() -> None:
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.SGD([{"params": model.body.parameters()}, {"params": model.head.parameters(), "lr": 0.05}], lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.5)
    loader = DataLoader(TensorDataset(torch.randn(96, 6), torch.randint(0, 3, (96,))), batch_size=8)
    losses, lrs, head_norms = {}, {}, {}
    with torchdoctor.watch() as watched:
        step = 0
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            step += 1
            losses[step] = loss.item()
            lrs[step] = optimizer.param_groups[1]["lr"]
            head_norms[step] = math.sqrt(model.head.weight.grad.norm() ** 2 + model.head.bias.grad.norm() ** 2)
            optimizer.step()
            scheduler.step()
    series = watched.report.sections["series"]
    assert column(series, "loss", "loss") == pytest.approx(losses, rel=1e-5)
    assert series["lr"]["columns"] == ["SGD group 0", "SGD group 1"]
    assert column(series, "lr", "SGD group 1") == pytest.approx(lrs)  # the lr each step used
    assert series["grad_norm"]["columns"] == ["body", "head"]
    assert column(series, "grad_norm", "head") == pytest.approx(head_norms, rel=1e-5)
    ratios = column(series, "update_ratio", "head")
    assert sorted(ratios) == list(range(UPDATE_STRIDE, 13, UPDATE_STRIDE))
    assert all(0 < r < 1 for r in ratios.values())
    times = series["step_time"]
    assert times["columns"] == ["data", "forward", "backward", "optimizer", "other"] and times["unit"] == "s"
    assert len(times["steps"]) == 12 and all(v >= 0 for row in times["values"] for v in row)


def test_a_frozen_layer_has_no_gradient_norm_and_a_dead_one_shows_zero() -> None:
    torch.manual_seed(0)
    model = Net()
    model.body.requires_grad_(False)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    with torchdoctor.watch() as watched:
        for _ in range(4):
            optimizer.zero_grad()
            (model(torch.randn(4, 6)) * 0).sum().backward()
            optimizer.step()
    heat = watched.report.sections["series"]["grad_norm"]
    assert heat["columns"] == ["head"] and heat["values"] == [[0.0]] * 4


def test_gradient_accumulation_averages_the_losses_of_a_step() -> None:
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    expected = {}
    with torchdoctor.watch() as watched:
        for step in range(1, 4):
            parts = []
            for _ in range(4):
                loss = F.cross_entropy(model(torch.randn(4, 6)), torch.randint(0, 3, (4,))) / 4
                loss.backward()
                parts.append(loss.item())
            optimizer.step()
            optimizer.zero_grad()
            expected[step] = sum(parts) / 4
    assert column(watched.report.sections["series"], "loss", "loss") == pytest.approx(expected, rel=1e-5)


def test_a_grad_scaler_loss_is_shown_unscaled() -> None:
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    expected = {}
    with torchdoctor.watch() as watched:
        for step in range(1, 4):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(torch.randn(4, 6)), torch.randint(0, 3, (4,)))
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            expected[step] = loss.item()
    assert column(watched.report.sections["series"], "loss", "loss") == pytest.approx(expected, rel=1e-5)


def test_a_scaled_loss_is_read_without_unpacking_saved_tensors() -> None:
    """Saved-tensor hooks (offloading, checkpointing) belong to the user's backward(): reading
    the scale a loss was multiplied by must not run them."""

    def unpacks(watch: bool) -> int:
        torch.manual_seed(0)
        model, count = Net(), [0]
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cpu")

        def unpack(tensor: torch.Tensor) -> torch.Tensor:
            count[0] += 1
            return tensor

        with torchdoctor.watch() if watch else contextlib.nullcontext():
            for _ in range(3):
                optimizer.zero_grad()
                with torch.autograd.graph.saved_tensors_hooks(lambda tensor: tensor, unpack):
                    loss = F.cross_entropy(model(torch.randn(4, 6)), torch.randint(0, 3, (4,)))
                    scaled = scaler.scale(loss)
                scaled.backward()
                scaler.step(optimizer)
                scaler.update()
        return count[0]

    assert unpacks(watch=True) == unpacks(watch=False) > 0


def test_without_an_optimizer_each_backward_is_a_step() -> None:
    torch.manual_seed(0)
    weight = torch.randn(3, requires_grad=True)
    losses = []
    with torchdoctor.watch() as watched:
        for _ in range(MANUAL_AFTER + 4):
            loss = (weight ** 2).sum()
            loss.backward()
            losses.append(loss.item())
            with torch.no_grad():
                weight -= 0.1 * weight.grad
                weight.grad = None
    series = watched.report.sections["series"]["loss"]
    assert series["steps"] == list(range(1, 6))
    first = sum(losses[:MANUAL_AFTER]) / MANUAL_AFTER  # until then it was not known to be manual
    assert [row[0] for row in series["values"]] == pytest.approx([first, *losses[MANUAL_AFTER:]], rel=1e-5)


def test_a_step_with_a_closure_records_the_gradients_the_closure_made() -> None:
    """Lightning steps with a closure: the gradients are made inside `step()`, after its pre-hook."""
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    norms, losses = {}, {}
    with torchdoctor.watch() as watched:
        for step in range(1, 4):
            def closure(step: int = step) -> torch.Tensor:
                optimizer.zero_grad()
                loss = F.cross_entropy(model(torch.randn(4, 6)), torch.randint(0, 3, (4,)))
                loss.backward()
                norms[step] = math.sqrt(model.head.weight.grad.norm() ** 2 + model.head.bias.grad.norm() ** 2)
                losses[step] = loss.item()
                return loss
            optimizer.step(closure)
    series = watched.report.sections["series"]
    assert column(series, "grad_norm", "head") == pytest.approx(norms, rel=1e-5)
    assert column(series, "loss", "loss") == pytest.approx(losses, rel=1e-5)
    times = series["step_time"]
    part = {name: times["columns"].index(name) for name in ("forward", "backward", "optimizer")}
    assert all(row[part["forward"]] > 0 and row[part["backward"]] > 0 for row in times["values"][1:])


def test_two_optimizers_share_the_clock() -> None:
    torch.manual_seed(0)
    generator, critic = nn.Linear(4, 4), nn.Linear(4, 1)
    g_opt, c_opt = torch.optim.Adam(generator.parameters()), torch.optim.SGD(critic.parameters(), lr=0.1)
    with torchdoctor.watch() as watched:
        for _ in range(3):
            c_opt.zero_grad()
            critic(generator(torch.randn(2, 4)).detach()).mean().backward()
            c_opt.step()
            g_opt.zero_grad()
            (-critic(generator(torch.randn(2, 4)))).mean().backward()
            g_opt.step()
    series = watched.report.sections["series"]
    assert series["lr"]["steps"] == [1, 2, 3] and series["lr"]["columns"] == ["SGD", "Adam"]
    assert series["grad_norm"]["steps"] == [1, 2, 3] and sorted(series["grad_norm"]["columns"]) == ["Linear #1", "Linear #2"]


def test_long_runs_stay_bounded() -> None:
    model = nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    steps = LAYER_ROWS * 2 + 10
    with torchdoctor.watch() as watched:
        for _ in range(steps):
            optimizer.zero_grad()
            model(torch.ones(1, 2)).sum().backward()
            optimizer.step()
    heat = watched.report.sections["series"]["grad_norm"]
    assert len(heat["steps"]) <= LAYER_ROWS and heat["stride"] == 4 and heat["steps"][-1] == steps - steps % 4
    # the update ratio copies every parameter when sampled: its samples thin out fastest
    ratio = watched.report.sections["series"]["update_ratio"]
    assert len(ratio["steps"]) <= UPDATE_ROWS and ratio["stride"] == UPDATE_STRIDE * 4


@pytest.mark.slow
def test_run_writes_the_series_into_the_json_report(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nfrom torch import nn\n"
        "model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.01)\n"
        "for step in range(20):\n"
        "    opt.zero_grad()\n"
        "    loss = model(torch.randn(8, 4)).pow(2).mean()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    print(f'{step + 1} {loss.item():.6g}')\n",
        encoding="utf-8",
    )
    ran = torchdoctor_run(str(script), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    printed = {int(step): float(value) for step, value in (line.split() for line in ran.stdout.splitlines())}
    series = ran.report["series"]
    assert column(series, "loss", "loss") == pytest.approx(printed, rel=1e-4)
    assert series["grad_norm"]["columns"] == ["0 (Linear)", "2 (Linear)"]
    assert ran.report["meta"]["series_from"]["complete"] is True
