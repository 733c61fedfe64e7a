"""Attribution of profiler events to user lines, on events made by hand (a GPU run included)."""

from __future__ import annotations

from collections import Counter

from torchdoctor.trace.attribute import (
    BACKWARD_PREFIX,
    DATA_PREFIX,
    Event,
    attribute,
    contiguous_strides,
    ordered_data_lines,
)
from torchdoctor.trace.options import LINE_PREFIX, OWN, STEP_PREFIX

MODEL, LOSS, BACKWARD, OTHER = (f"{LINE_PREFIX}train.py:{n}" for n in (10, 11, 12, 3))


def step(index: int, at: int) -> Event:
    return Event(f"{STEP_PREFIX}{index}", 1, at, at)


def one_step(offset: int = 0) -> list[Event]:
    """x.t() on data (no graph, sequence number 7 recorded), the model (linear, whose t and
    addmm create nodes 7 and 8), the loss, backward() running the nodes of 8 and 7."""
    o = offset
    return [
        Event(OTHER, 1, o + 10, o + 20), Event("aten::t", 1, o + 11, o + 19, seq=7),
        Event(MODEL, 1, o + 30, o + 100),
        Event("aten::linear", 1, o + 31, o + 99, seq=7),
        Event("aten::t", 1, o + 32, o + 40, seq=7),
        Event("aten::addmm", 1, o + 41, o + 98, seq=8, shapes=[[4], [2, 3], [3, 4]], dtypes=["float", "float", "float"]),
        Event(LOSS, 1, o + 110, o + 130), Event("aten::mse_loss", 1, o + 111, o + 129, seq=9),
        Event(BACKWARD, 1, o + 140, o + 300),
        Event(f"{BACKWARD_PREFIX}MseLossBackward0", 1, o + 150, o + 170, seq=9, fwd_thread=1),
        Event(f"{BACKWARD_PREFIX}AddmmBackward0", 1, o + 180, o + 250, seq=8, fwd_thread=1),
        Event("aten::mm", 1, o + 181, o + 240),
        Event(f"{BACKWARD_PREFIX}TBackward0", 1, o + 260, o + 270, seq=7, fwd_thread=1),
        Event(f"{BACKWARD_PREFIX}torch::autograd::AccumulateGrad", 1, o + 280, o + 290),
    ]


def test_forward_and_backward_time_go_to_the_line_that_ran_the_forward_op() -> None:
    events = [step(0, 0), *one_step(), step(1, 400)]
    found = attribute(events)
    model = found.lines[MODEL]
    assert model.forward_ns == 70 and model.backward_ns == 70 + 10  # AddmmBackward0 and TBackward0
    assert model.ops["aten::addmm"].count == 1 and model.ops["aten::linear"].direct == 1
    assert model.backward_ops["aten::mm"].count == 1
    assert dict(model.nodes) == {"AddmmBackward0": 1, "TBackward0": 1}
    # the data line's x.t() recorded sequence number 7 too, but did not create node 7
    assert found.lines[OTHER].backward_ns == 0
    assert found.lines[LOSS].backward_ns == 20
    # what backward() itself did (the engine, gradient accumulation) is its line's
    assert found.lines[BACKWARD].forward_ns == 160 - 20 - 70 - 10
    assert sum(line.total_ns for line in found.lines.values()) == found.total_ns


def test_steps_split_the_time_and_every_event_is_counted_once() -> None:
    events = [step(0, 0), *one_step(0), step(1, 400), *one_step(400), step(2, 800)]
    found = attribute(events)
    assert [s.index for s in found.steps] == [1, 2]
    assert found.total_ns == sum(s.op_ns for s in found.steps) == 2 * sum(line.total_ns for line in attribute([step(0, 0), *one_step(), step(1, 400)]).lines.values())
    assert found.lines[MODEL].per_step_ns == {1: 150, 2: 150}


def test_a_record_function_under_no_line_goes_to_the_line_of_its_calls() -> None:
    """Optimizer.step#SGD.step wraps the torch calls the optimizer makes from the user's
    `optimizer.step()` line; its own time is that line's. With no calls under it, it is the remainder."""
    step_line = f"{LINE_PREFIX}train.py:13"
    events = [
        step(0, 0),
        Event("Optimizer.step#SGD.step", 1, 10, 100), Event(step_line, 1, 20, 40), Event("aten::add_", 1, 21, 39),
        Event(step_line, 1, 50, 60), Event("aten::add_", 1, 51, 59),
        Event("Optimizer.zero_grad#SGD.zero_grad", 1, 110, 130),
        step(1, 200),
    ]
    found = attribute(events)
    assert found.lines[step_line].total_ns == 90 and found.lines[step_line].calls == 2
    assert found.remainder == {"Optimizer.zero_grad#SGD.zero_grad": 20}
    assert found.total_ns == 110


def test_data_wait_and_its_line() -> None:
    loop = f"{LINE_PREFIX}train.py:8"
    events = [step(0, 0), Event(f"{DATA_PREFIX}_SingleProcessDataLoaderIter.__next__", 1, 5, 305),
              Event(loop, 1, 100, 300), Event("aten::stack", 1, 101, 299), *one_step(310), step(1, 700)]
    found = attribute(events)
    assert found.steps[0].data_ns == 300 and found.data_lines == [loop]
    assert found.lines[loop].total_ns == 300


def test_gpu_kernels_syncs_and_busy_time_follow_their_launching_op() -> None:
    line = f"{LINE_PREFIX}train.py:20"
    item = f"{LINE_PREFIX}train.py:21"
    events = [
        step(0, 0),
        Event(line, 1, 10, 100), Event("aten::mm", 1, 11, 99, corr=5),
        Event("cudaLaunchKernel", 1, 20, 30, linked=5),
        Event("gemm_kernel", 7, 40, 20040, linked=5, device="cuda"),  # 20 µs
        Event("add_kernel", 8, 20000, 20050, linked=5, device="cuda"),  # on another stream, overlapping: busy time is the union
        Event(item, 1, 110, 2000), Event("aten::item", 1, 111, 1999), Event("aten::_local_scalar_dense", 1, 112, 1998, corr=6),
        Event("cudaMemcpyAsync", 1, 120, 130, linked=6), Event("cudaStreamSynchronize", 1, 131, 1990, linked=6),
        step(1, 30000),
    ]
    found = attribute(events)
    assert found.lines[line].kernels == 2 and found.lines[line].device_ns == 20000 + 50
    assert found.steps[0].device_ns == 20010 and found.steps[0].kernels == 2 and found.steps[0].small_kernels == 1
    assert found.lines[item].syncs == 1 and found.lines[item].syncs_per_step == {1: 1}  # not twice for one .item()
    assert found.lines[line].syncs == 0


def test_copies_from_strided_sources() -> None:
    line = f"{LINE_PREFIX}train.py:5"
    strided = Event("aten::copy_", 1, 11, 19, shapes=[[32, 16], [32, 16], []], dtypes=["float", "float", "Scalar"])
    strided.strides = [[16, 1], [1, 32], []]
    plain = Event("aten::copy_", 1, 21, 29, shapes=[[32, 16], [32, 16], []], dtypes=["float", "float", "Scalar"])
    plain.strides = [[16, 1], [16, 1], []]
    broadcast = Event("aten::copy_", 1, 31, 39, shapes=[[16, 64], [16, 64], []])
    broadcast.strides = [[64, 1], [0, 1], []]  # a broadcast bias: stride 0 is not a gather
    found = attribute([step(0, 0), Event(line, 1, 10, 40), strided, plain, broadcast, step(1, 50)])
    copies = found.lines[line].ops["aten::copy_"]
    assert copies.count == 3 and copies.copies_from_strided == 1
    assert contiguous_strides([2, 3, 4]) == [12, 4, 1]


def test_copies_inside_a_computing_op_are_its_own() -> None:
    """`torch.stft` frames its signal with a strided copy: that is how stft works, not a layout
    the user chose; the same copy under the line's `.contiguous()` is."""
    line = f"{LINE_PREFIX}train.py:5"

    def gather(start: int) -> Event:
        copy = Event("aten::copy_", 1, start, start + 8, shapes=[[32, 16], [32, 16], []], dtypes=["float", "float", "Scalar"])
        copy.strides = [[16, 1], [1, 32], []]
        return copy

    found = attribute([step(0, 0), Event(line, 1, 10, 90),
                       Event("aten::stft", 1, 11, 40), Event("aten::contiguous", 1, 12, 39), gather(20),
                       Event("aten::contiguous", 1, 50, 80), Event("aten::clone", 1, 51, 79), gather(60),
                       step(1, 100)])
    copies = found.lines[line].ops["aten::copy_"]
    assert copies.count == 2 and copies.copies_from_strided == 1


def test_a_datasets_own_work_is_named_before_the_loop_that_asks_for_batches() -> None:
    """A busy machine stretches the DataLoader's own time (indexing, collate) more than a
    dataset's torch work: the dataset's line stays first while it does a real part of the work."""
    loop, dataset = "train.py:8", "data.py:20"
    assert ordered_data_lines(Counter({dataset: 300, loop: 100}), Counter({loop: 800})) == [dataset, loop]
    assert ordered_data_lines(Counter({dataset: 100, loop: 50}), Counter({loop: 900})) == [loop, dataset]  # the work is elsewhere
    assert ordered_data_lines(Counter(), Counter({loop: 900})) == [loop]


def test_a_python_number_in_a_float32_op_is_no_float64_compute() -> None:
    """`exp_avg / (bias_correction * lr)` (Adam) hands a float32 op a 0-dim float64 tensor."""
    line = f"{LINE_PREFIX}train.py:13"
    scalar = Event("aten::div", 1, 21, 39, dtypes=["float", "double"], shapes=[[32, 3], []])
    real = Event("aten::mm", 1, 50, 90, dtypes=["double", "double"], shapes=[[8, 4], [4, 2]])
    events = [step(0, 0), Event(line, 1, 20, 40), scalar, Event(line, 1, 49, 91), real, step(1, 200)]
    found = attribute(events)
    assert sum(found.lines[line].float64_per_step.values()) == 40  # the mm only


def test_a_fallback_kernel_counts_whole_and_once_and_not_in_float64() -> None:
    line = f"{LINE_PREFIX}model.py:30"
    outer = Event("aten::thnn_conv2d", 1, 21, 81, dtypes=["float"], shapes=[[8, 3, 32, 32]])
    inner = Event("aten::_slow_conv2d_forward", 1, 22, 80, dtypes=["float"], shapes=[[8, 3, 32, 32]])
    mm = Event("aten::addmm", 1, 30, 70, dtypes=["float"], shapes=[[16, 27]])
    double = Event("aten::thnn_conv2d", 1, 101, 141, dtypes=["double"], shapes=[[8, 3, 32, 32]])  # TD471's
    events = [step(0, 0), Event(line, 1, 20, 82), outer, inner, mm, Event(line, 1, 100, 142), double, step(1, 200)]
    stats = attribute(events).lines[line]
    assert stats.slow_paths == {"aten::thnn_conv2d": 1} and sum(stats.slow_per_step.values()) == 60


def test_torchdoctors_own_calls_inside_a_users_step_are_its_own() -> None:
    """A detector called from the optimizer's hook runs inside `Optimizer.step`: its ops are
    not given to the line whose update is the busiest under that step."""
    step_line = f"{LINE_PREFIX}train.py:13"
    events = [
        step(0, 0),
        Event("Optimizer.step#SGD.step", 1, 10, 100), Event(step_line, 1, 20, 40), Event("aten::add_", 1, 21, 39),
        Event(OWN, 1, 50, 90), Event("aten::_foreach_norm", 1, 51, 89),
        step(1, 200),
    ]
    found = attribute(events)
    assert set(found.lines[step_line].ops) == {"aten::add_"}
    assert found.remainder[OWN] == 40  # the range, its op included
    assert found.steps[0].op_ns == 50  # ... and no part of the step's op time: the step's own 30, the line's 20
