"""Each performance diagnosis on trace records made by hand: flagged, and its correct twin not.

The GPU-only verdicts (launch-bound steps, syncs, CPU work in a GPU run, autocast for the
wrong device) can only be tested this way on a machine without a GPU; the others are also
tested on real traces of the lab programs (test_lab.py)."""

from __future__ import annotations

from typing import Any

import pytest

from torchdoctor.trace.diagnose import diagnose

GPU = {"dtypes": {"float32": 1_000_000}, "devices": {"cuda": 1_000_000}}
CPU = {"dtypes": {"float32": 1_000_000}, "devices": {"cpu": 1_000_000}}


def line(location: str = "train.py:10", **fields: Any) -> dict[str, Any]:
    file, number = location.rsplit(":", 1)
    return {"location": location, "file": file, "line": int(number), "us": 1000.0, "share": 0.1, "ops": [],
            "backward": {"nodes": {}, "ops": []}, "devices": [], "autocast": [], "kernels": 0, "syncs_per_step": [], **fields}


def record(steps: list[dict[str, Any]], lines: list[dict[str, Any]], parameters: dict[str, Any] = CPU, **extra: Any) -> dict[str, Any]:
    return {"parameters": parameters, "steps": steps, "lines": lines, "total_us": sum(s.get("op_us", 0) for s in steps), **extra}


def codes(found: dict[str, Any]) -> list[str]:
    return [f.rule for f in diagnose(found)]


def gpu_steps(busy: float, kernels: int, small: int, n: int = 3) -> list[dict[str, Any]]:
    return [{"index": i + 1, "wall_us": 10_000, "op_us": 8000, "device_us": busy * 10_000, "kernels": kernels,
             "small_kernels": small} for i in range(n)]


def test_launch_bound_steps() -> None:
    hot = line("train.py:31", kernels=2400)
    assert codes(record(gpu_steps(0.15, 900, 850), [hot], GPU)) == ["TD470"]
    finding = diagnose(record(gpu_steps(0.15, 900, 850), [hot], GPU))[0]
    assert (finding.file, finding.line) == ("train.py", 31) and "800 per step" in finding.message
    assert codes(record(gpu_steps(0.9, 120, 10), [hot], GPU)) == []  # large kernels, a busy GPU
    assert codes(record(gpu_steps(0.15, 40, 38), [hot], GPU)) == []  # few kernels: a small step, not a launch storm
    assert codes(record(gpu_steps(0.7, 900, 850), [hot], GPU)) == []  # tiny kernels but the GPU is busy
    steps = gpu_steps(0.15, 900, 850)
    steps[1] = {**steps[1], "device_us": 9000}  # not in every traced step
    assert codes(record(steps, [hot], GPU)) == []
    assert codes(record(gpu_steps(0.15, 900, 850), [hot], CPU)) == []  # a CPU run has no kernels to launch


def test_host_syncs_every_step_on_a_gpu_run() -> None:
    steps = gpu_steps(0.8, 50, 5)
    item = line("train.py:40", syncs_per_step=[1, 1, 1], ops=[{"op": "aten::_local_scalar_dense", "count": 3, "us": 30, "dtypes": []}])
    logged = line("train.py:44", syncs_per_step=[0, 1, 0])  # every N steps: logging
    found = diagnose(record(steps, [item, logged], GPU))
    assert [(f.rule, f.line, f.severity.value) for f in found] == [("TD452", 40, "info")]
    assert "aten::_local_scalar_dense" in found[0].message
    many = line("train.py:40", syncs_per_step=[4, 3, 5])
    assert [f.severity.value for f in diagnose(record(steps, [many], GPU))] == ["warning"]
    assert codes(record(steps, [item], CPU)) == []  # nothing to wait for on a CPU run


def test_float64_compute_in_a_float32_model() -> None:
    steps = [{"index": i, "wall_us": 1000, "op_us": 1000} for i in (1, 2, 3)]
    mm = [{"op": "aten::mm", "count": 3, "us": 600, "dtypes": ["float64"]}]
    found = diagnose(record(steps, [line("model.py:19", ops=mm, float64_per_step_us=[200, 210, 190])]))
    assert [(f.rule, f.line) for f in found] == [("TD471", 19)] and "20%" in found[0].message
    assert "aten::mm (1 per step)" in found[0].message
    small = line("model.py:19", ops=mm, float64_per_step_us=[50, 40, 60])
    assert codes(record(steps, [small])) == []  # a float64 metric or loss on purpose, a small share
    bad = line("model.py:19", ops=mm, float64_per_step_us=[200, 210, 190])
    assert codes(record(steps, [bad], {"dtypes": {"float64": 1000}, "devices": {"cpu": 1000}})) == []  # float64 throughout
    backward = line("model.py:19", float64_per_step_us=[300, 300, 300],
                    backward={"nodes": {"MmBackward0": 3}, "ops": [{"op": "aten::mm", "count": 6, "us": 900, "dtypes": ["float64"]}]})
    assert codes(record(steps, [backward])) == ["TD471"]


def test_float64_cost_is_read_step_by_step_on_one_clock_so_load_does_not_move_it() -> None:
    """A busy machine stretches a whole step, the float64 op and the rest alike: its share of
    each step stays 20%. The thread's CPU time (1 ms) is no denominator: it leaves out the
    waits for a core that the ops' times include (that read 300% here)."""
    busy = [{"index": i, "wall_us": wall, "op_us": wall, "cpu_us": 1000} for i, wall in ((1, 4000), (2, 3000), (3, 5000))]
    mm = [{"op": "aten::mm", "count": 3, "us": 3000, "dtypes": ["float64"]}]
    (found,) = diagnose(record(busy, [line("model.py:19", ops=mm, float64_per_step_us=[800, 600, 1000])]))
    assert found.rule == "TD471" and "20%" in found.message
    # ... and a float64 op preempted once is not a float64 cost
    assert codes(record(busy, [line("model.py:19", ops=mm, float64_per_step_us=[40, 2600, 50])])) == []
    # ... nor is the DataLoader's share of a step part of what the line is read against
    fetching = [{**step, "data_in_process_us": step["op_us"] / 2} for step in busy]
    assert codes(record(fetching, [line("model.py:19", ops=mm, float64_per_step_us=[300, 225, 375])])) == ["TD471"]  # 15%, not 7.5%


def test_float64_cost_on_a_gpu_is_the_kernels_time() -> None:
    steps = [{"index": i, "wall_us": 10_000, "op_us": 2000, "device_us": 8000} for i in (1, 2, 3)]
    mm = [{"op": "aten::mm", "count": 3, "us": 30, "dtypes": ["float64"]}]
    slow = line("model.py:19", ops=mm, float64_per_step_us=[10, 10, 10], float64_device_per_step_us=[5000, 5100, 4900])
    assert codes(record(steps, [slow], GPU)) == ["TD471"]  # the launches are cheap, the kernels are not
    fast = line("model.py:19", ops=mm, float64_per_step_us=[10, 10, 10], float64_device_per_step_us=[100, 100, 100])
    assert codes(record(steps, [fast], GPU)) == []


def test_cpu_compute_in_a_gpu_run() -> None:
    steps = [{"index": i, "wall_us": 10_000, "op_us": 5000} for i in (1, 2)]
    cdist = [{"op": "aten::cdist", "count": 2, "us": 7000, "dtypes": ["float32"]}]
    assert codes(record(steps, [line("train.py:40", devices=["cpu"], ops=cdist)], GPU)) == ["TD472"]
    assert codes(record(steps, [line("train.py:40", devices=["cuda"], ops=cdist)], GPU)) == []
    assert codes(record(steps, [line("train.py:40", devices=["cpu"], ops=cdist)], CPU)) == []  # a CPU run
    collate = line("train.py:8", devices=["cpu"], ops=[{"op": "aten::stack", "count": 2, "us": 9000, "dtypes": ["float32"]}])
    assert codes(record(steps, [collate], GPU, data_lines=["train.py:8"])) == []  # batches are built on the CPU
    normalise = line("train.py:8", devices=["cpu"], ops=[{"op": "aten::div", "count": 2, "us": 9000, "dtypes": ["float32"]}])
    assert codes(record(steps, [normalise], GPU, data_lines=["train.py:8"])) == []


def test_strided_copies_on_a_hot_line() -> None:
    steps = [{"index": i, "wall_us": 1000, "op_us": 1000, "cpu_us": 1000} for i in (1, 2, 3)]
    copy = [{"op": "aten::copy_", "count": 3, "us": 600, "dtypes": ["float32"], "shapes": ["64x3x96x96, 64x3x96x96"],
             "copies_from_strided": 3, "copies_from_strided_us": 600}]
    found = diagnose(record(steps, [line("train.py:10", ops=copy, strided_copy_per_step_us=[200, 200, 200])]))
    assert [(f.rule, f.line) for f in found] == [("TD473", 10)] and "64x3x96x96" in found[0].message
    once = line("train.py:10", ops=copy, strided_copy_per_step_us=[600, 0, 0])
    assert codes(record(steps, [once])) == []  # not every step
    cheap = line("train.py:10", ops=copy, strided_copy_per_step_us=[30, 30, 30])
    assert codes(record(steps, [cheap])) == []  # a small share
    assert codes(record(steps, [line("train.py:10")])) == []  # no strided copy


def test_autocast_for_another_device() -> None:
    wrong = line("train.py:52", autocast=["cpu"], devices=["cuda"], autocast_ops=["aten::linear"])
    found = diagnose(record([], [wrong]))
    assert [(f.rule, f.line) for f in found] == [("TD474", 52)] and "cpu" in found[0].message and "cuda" in found[0].message
    right = line("train.py:52", autocast=["cuda"], devices=["cuda"], autocast_ops=[])
    assert codes(record([], [right])) == []
    no_eligible_op = line("train.py:52", autocast=["cpu"], devices=["cuda"], autocast_ops=[])
    assert codes(record([], [no_eligible_op])) == []  # e.g. only element-wise ops, which autocast leaves alone


@pytest.mark.parametrize(("data", "in_process", "expected"), [(700, 700, ["TD314"]), (100, 100, []), (700, 0, [])])
def test_data_wait(data: float, in_process: float, expected: list[str]) -> None:
    """Only batches made in the training process count: the wait for worker processes depends
    on how busy the machine is."""
    steps = [{"index": i, "wall_us": 1000, "op_us": 900, "data_us": data, "data_in_process_us": in_process} for i in (1, 2, 3)]
    loop = line("train.py:8")
    found = diagnose(record(steps, [loop], data_lines=["train.py:8"]))
    assert [f.rule for f in found] == expected
    if found:
        assert found[0].line == 8 and "70%" in found[0].message


def test_a_convolution_in_the_fallback_kernel() -> None:
    """oneDNN turned off on the CPU (cuDNN on a GPU): the convolution's im2col kernel, a third
    of each step, with the flag named; its twin, the library kernel, has no fallback to report."""
    steps = [{"index": i, "wall_us": 1000, "op_us": 1000} for i in (1, 2, 3)]
    conv = line("model.py:30", slow_paths={"aten::thnn_conv2d": 3, "aten::_slow_conv2d_backward": 3},
                slow_path_per_step_us=[330, 340, 320])
    (found,) = diagnose(record(steps, [conv], backends={"mkldnn": False, "cudnn": True}))
    assert (found.rule, found.line, found.severity.value) == ("TD475", 30, "warning")
    assert "aten::thnn_conv2d" in found.message and "`torch.backends.mkldnn.enabled` is False" in found.message
    assert "`torch.backends.mkldnn.enabled = False` or a `torch.backends.mkldnn.flags(enabled=False)` block" in (found.hint or "")
    (on_gpu,) = diagnose(record(steps, [conv], GPU, backends={"mkldnn": True, "cudnn": False}))
    assert "instead of cuDNN because `torch.backends.cudnn.enabled` is False" in on_gpu.message
    assert codes(record(steps, [{**conv, "slow_path_per_step_us": [330, 0, 320]}])) == []  # not in every step
    assert codes(record(steps, [{**conv, "slow_path_per_step_us": [30, 40, 20]}])) == []  # a small share
    assert codes(record(steps, [line("model.py:30", slow_path_per_step_us=[0, 0, 0])])) == []


def test_attention_in_the_math_kernel_only_on_a_device() -> None:
    """On the CPU the math kernel is also the one for attention with dropout: not reported there."""
    steps = [{"index": i, "wall_us": 1000, "op_us": 1000} for i in (1, 2)]
    attention = line("model.py:12", slow_paths={"aten::_scaled_dot_product_attention_math": 2}, slow_path_per_step_us=[500, 520])
    (found,) = diagnose(record(steps, [attention], GPU))
    assert found.rule == "TD475" and "scaled_dot_product_attention" in found.message and "sdpa_kernel" in (found.hint or "")
    assert codes(record(steps, [attention], CPU)) == []
