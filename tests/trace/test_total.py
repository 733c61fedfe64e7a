"""The per-line times add up to the profiler's own total for the traced steps (within 5%), and
the trace in process changes nothing of the training."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.session import Session
from torchdoctor.trace.options import OWN, TraceOptions
from torchdoctor.trace.tracer import StepTracer


class Tracer(StepTracer):
    options = TraceOptions(steps=4, skip=3)


def train(steps: int) -> nn.Module:
    torch.manual_seed(0)
    images, labels = torch.randn(256, 3, 16, 16), torch.randint(0, 10, (256,))
    loader = DataLoader(TensorDataset(images, labels), batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 16 * 16, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = 0
    while step < steps:
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            step += 1
            if step == steps:
                break
    return model


def test_line_times_add_up_to_the_profilers_total() -> None:
    torch.set_num_threads(1)
    session = Session.start(emit=lambda finding, key: None, detectors=[Tracer])
    try:
        train(10)
        tracer = next(d for d in session.detectors if isinstance(d, Tracer))
    finally:
        session.finish(Outcome.from_exception(None))
        session.uninstall()
    found = tracer.result
    assert found is not None and found["traced"] == 4
    # the profiler's own accounting: the self CPU time of every event it recorded
    profiler_total = sum(event.self_cpu_time_total for event in tracer.profile.key_averages())
    lines_total = sum(line["us"] for line in found["lines"])
    # what is under no user line: run's detectors (kept off the user's lines), an optimizer's
    # zero_grad that made no torch call ...
    remainder = {r["name"]: r["us"] for r in found["remainder"]}
    assert abs(lines_total + sum(remainder.values()) - profiler_total) <= 0.05 * profiler_total, (lines_total, remainder, profiler_total)
    assert sum(us for name, us in remainder.items() if name != OWN) <= 0.05 * profiler_total, remainder
    assert abs(found["total_us"] - profiler_total) <= 0.05 * profiler_total
    # the DataLoader's fetches are the for-loop's line, Adam's work the step's
    sources = {line["source"]: line for line in found["lines"]}
    assert sources["for x, y in loader:"]["us"] > 0 and found["data_lines"] == [sources["for x, y in loader:"]["location"]]
    assert any(op["op"].startswith("aten::_foreach") or op["op"] == "aten::add_" for op in sources["optimizer.step()"]["ops"])


def test_tracing_in_process_changes_no_weight() -> None:
    torch.set_num_threads(1)
    plain = train(10).state_dict()
    session = Session.start(emit=lambda finding, key: None, detectors=[Tracer])
    try:
        traced = train(10).state_dict()
    finally:
        session.finish(Outcome.from_exception(None))
        session.uninstall()
    assert plain.keys() == traced.keys()
    assert all(torch.equal(plain[name], traced[name]) for name in plain)


def test_a_script_running_its_own_profiler_is_left_alone() -> None:
    torch.set_num_threads(1)
    session = Session.start(emit=lambda finding, key: None, detectors=[Tracer])
    try:
        with torch.profiler.profile():
            train(6)
        tracer = next(d for d in session.detectors if isinstance(d, Tracer))
    finally:
        session.finish(Outcome.from_exception(None))
        session.uninstall()
    assert tracer.result is not None and tracer.result["ended"] == "profiler-in-use" and tracer.result["lines"] == []
