"""TD201: CUDA asked of a CPU-only build of torch."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.run.test_crash import explained, line_of

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the crash needs a machine without CUDA")


def test_a_model_moved_with_cuda_names_the_call() -> None:
    def build() -> None:
        model = nn.Linear(4, 2)
        model = model.cuda()

    finding = explained(build)
    assert finding.rule == "TD201" and finding.line == line_of("model = model.cuda()", build)
    assert finding.message.startswith("`model.cuda()` asks for a CUDA device, and this")
    assert ("CPU-only build" if torch.version.cuda is None else "finds no NVIDIA driver") in finding.message
    assert "torch.cuda.is_available()" in finding.hint


def test_a_device_string_names_the_call_that_got_it() -> None:
    def make() -> None:
        print(torch.zeros(3, device="cuda"))

    finding = explained(make)
    assert finding.rule == "TD201" and "`torch.zeros(3, device='cuda')`" in finding.message


@pytest.mark.skipif(torch.version.cuda is not None, reason="its TypeError is that of a CPU-only build")
def test_a_legacy_cuda_tensor_type_is_named() -> None:
    def make() -> None:
        print(torch.cuda.FloatTensor(2))

    finding = explained(make)
    assert finding.rule == "TD201" and "`torch.cuda.FloatTensor(2)`" in finding.message


def test_a_device_asked_through_a_variable_says_the_line() -> None:
    device = "cuda"

    def move() -> None:
        print(torch.ones(2).to(device))

    finding = explained(move)
    assert finding.rule == "TD201" and finding.message.startswith("this line asks for a CUDA device")


def test_a_move_to_get_device_of_a_cpu_tensor_names_it() -> None:
    def move() -> None:
        reference = torch.randn(3)
        print(torch.zeros(3).to(reference.get_device()))

    finding = explained(move)
    assert finding.rule == "TD202" and finding.line == line_of("reference.get_device()", move)
    assert finding.message.startswith("`reference.get_device()` is -1: `reference` is on the CPU")
    assert "`.to(reference.device)`" in finding.hint
