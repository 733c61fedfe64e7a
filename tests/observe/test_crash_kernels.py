"""Crash to kernel: crashes raised inside an op name the aten op, the dispatch key whose kernel
failed, and the backends this install has a kernel for (read from its dispatcher)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.run.test_crash import explained, line_of
from torchdoctor.introspect.dispatcher import backends_with_kernel
from torchdoctor.observe.crash.explain import explain_crash
from torchdoctor.observe.crash.model import Crash
from torchdoctor.observe.crash.ops import op_at


def test_dtype_mismatch_with_a_c10_dtype_names_both_dtypes_and_the_op() -> None:
    def action() -> None:
        x = torch.randn(4, 8)
        weight = torch.randn(3, 8).half()
        F.linear(x, weight)  # "expected m1 and m2 to have the same dtype, but got: float != c10::Half"

    finding = explained(action)
    assert finding.rule == "TD411" and finding.line == line_of("F.linear(x, weight)", action)
    assert "`x` is float32 but `weight` is float16" in finding.message
    assert "aten::linear's CPU kernel" in finding.message
    assert finding.evidence["op"]["op"] == "aten::linear"


def test_expected_scalar_type_in_a_convolution_names_the_op() -> None:
    def action() -> None:
        images = torch.randn(1, 3, 8, 8)
        kernels = torch.randn(4, 3, 3, 3).half()
        F.conv2d(images, kernels)  # "expected scalar type Float but found Half"

    finding = explained(action)
    assert finding.rule == "TD411" and "aten::conv2d's CPU kernel" in finding.message


def test_a_cpu_kernel_without_float16_names_the_op_the_key_and_the_backends() -> None:
    def action() -> None:
        covariance = torch.eye(4).half()
        torch.linalg.eigh(covariance)  # "linalg_eigh_cpu" not implemented for 'Half'

    finding = explained(action)
    assert finding.rule == "TD432" and finding.line == line_of("torch.linalg.eigh(", action)
    assert finding.message.startswith("aten::linalg_eigh's CPU kernel (linalg_eigh_cpu) has no float16 version: `covariance` is float16")
    own, composite = backends_with_kernel("aten::linalg_eigh")
    assert finding.evidence["backends"] == (", ".join(own) if own else "every backend, as other ops (a composite op)")
    assert "float32" in finding.hint


def test_an_integer_tensor_where_a_kernel_needs_floats() -> None:
    def action() -> None:
        counts = torch.ones(3, dtype=torch.long)
        counts.normal_()  # "normal_kernel_cpu" not implemented for 'Long'

    finding = explained(action)
    assert finding.rule == "TD432" and "aten::normal_'s CPU kernel (normal_kernel_cpu) has no int64 version" in finding.message
    assert "`.float()`" in finding.hint


def test_could_not_run_names_the_backend_the_tensor_and_the_backends_with_a_kernel() -> None:
    def action() -> None:
        scores = torch.randn(4, 4).to_sparse()
        scores.view(16)

    finding = explained(action)
    assert finding.rule == "TD431" and finding.line == line_of("scores.view(16)", action)
    assert finding.message.startswith("aten::view has no kernel for the SparseCPU backend (`scores`)")
    own, _ = backends_with_kernel("aten::view")
    assert "CPU" in own and ", ".join(own) in finding.message
    assert "`.to_dense()`" in finding.hint


@pytest.mark.parametrize(("message", "op", "key"), [
    ("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
     "(when checking argument for argument mat1 in method wrapper_CUDA_addmm)", "aten::addmm", "CUDA"),
    ("Could not run 'aten::_foo' with arguments from the 'MPS' backend. This could be because the operator doesn't exist",
     "aten::_foo", "MPS"),
])
def test_gpu_messages_name_the_op_and_key(message: str, op: str, key: str) -> None:
    site = op_at(Crash("RuntimeError", message, ()))
    assert site is not None and (site.op, site.key) == (op, key)


def test_device_mismatch_on_a_gpu_message_says_which_kernel() -> None:
    crash = Crash("RuntimeError", "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
                  "(when checking argument for argument mat1 in method wrapper_CUDA_addmm)", ())
    finding = explain_crash(crash, None)
    assert finding is not None and finding.rule == "TD410" and "aten::addmm's CUDA kernel" in finding.message


def test_an_op_missing_on_mps_suggests_the_fallback() -> None:
    crash = Crash("NotImplementedError", "Could not run 'aten::mm' with arguments from the 'MPS' backend. ...", ())
    finding = explain_crash(crash, None)
    assert finding is not None and finding.rule == "TD431" and "PYTORCH_ENABLE_MPS_FALLBACK=1" in finding.hint
