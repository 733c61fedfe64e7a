"""TD200: `torch.load` of tensors onto a CUDA device this machine lacks.

The error is torch's own: a checkpoint saved on a GPU is made here by saving while torch's
`location_tag` says "cuda:0" (what a GPU machine writes), then loaded by real `torch.load`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.serialization

from tests.run.test_crash import explained, line_of

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the crash needs a machine without CUDA")


def saved_on_gpu(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(torch.serialization, "location_tag", lambda storage: "cuda:0")
        torch.save(torch.nn.Linear(4, 2).state_dict(), path)


def test_a_checkpoint_saved_on_a_gpu_names_its_device_at_the_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "model.pt"
    saved_on_gpu(path, monkeypatch)

    def load() -> None:
        model = torch.nn.Linear(4, 2)
        model.load_state_dict(torch.load(path))

    finding = explained(load)
    assert finding.rule == "TD200" and finding.line == line_of("torch.load(path)", load)
    assert f"`{path}` puts its tensors back on `cuda:0`" in finding.message
    assert ("CPU-only build" if torch.version.cuda is None else "finds no GPU") in finding.message
    assert 'map_location="cpu"' in finding.hint


def test_a_map_location_written_as_cuda_is_named(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    torch.save(torch.nn.Linear(4, 2).state_dict(), path)  # saved from the CPU: the mapping alone fails

    def load() -> None:
        torch.load(path, map_location="cuda")

    finding = explained(load)
    assert finding.rule == "TD200" and "`map_location='cuda'`" in finding.message
    assert "torch.cuda.is_available()" in finding.hint


def test_a_load_inside_a_helper_points_at_the_users_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "model.pt"
    saved_on_gpu(path, monkeypatch)

    def restore(where: Path) -> dict:
        with open(where, "rb") as handle:
            return torch.load(handle, weights_only=True)

    finding = explained(lambda: restore(path))
    assert finding.rule == "TD200" and finding.line == line_of("torch.load(handle", restore)
    assert f"`{path}`" in finding.message


def test_the_same_checkpoint_mapped_to_the_cpu_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "model.pt"
    saved_on_gpu(path, monkeypatch)
    assert torch.load(path, map_location="cpu")["weight"].device.type == "cpu"
