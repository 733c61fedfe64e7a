"""The traced steps as a Chrome trace (JSON Trace Event Format), for Perfetto or chrome://tracing.

Complete events (`"ph": "X"`) per thread, nested as the profiler recorded them; every event
carries the user line it belongs to (`args["user line"]`, and `"backward of"` for the
backward pass), the line ranges themselves are named after the lines, the steps are spans on
a track of their own, and device kernels go on one track per stream. Events on one track
nest properly (an event that overlaps its neighbour without nesting goes to an overflow
track), which is what the format requires of complete events.

No torch here.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.trace.attribute import BACKWARD_PREFIX, Attribution, Event, line_location
from torchdoctor.trace.options import STEP_PREFIX

STEPS_TID = 0
#: tracks of device streams and of overlapping events are offset from the host threads' ids
DEVICE_TID = 1_000_000
OVERFLOW_TID = 2_000_000


def trace(events: list[Event], attribution: Attribution, found: dict[str, Any], *, pid: int) -> dict[str, Any]:
    start = attribution.window[0]
    out: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": f"torchdoctor trace (pid {pid})"}},
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": STEPS_TID, "args": {"name": "steps"}},
    ]
    for step in attribution.steps:
        out.append(_complete(f"step {step.index}", "step", pid, STEPS_TID, step.start - start, step.end - step.start,
                             {"op_us": round(step.op_ns / 1000, 1), "data_us": round(step.data_ns / 1000, 1)}))
    threads: set[int] = set()
    open_until: dict[int, list[int]] = {}
    host = sorted((e for e in events if e.device == "cpu" and not e.name.startswith(STEP_PREFIX)), key=lambda e: (e.thread, e.start, -e.end))
    for event in host:
        if event.end < start:
            continue
        tid = _track(event, open_until)
        threads.add(tid)
        out.append(_complete(_name(event), _category(event), pid, tid, event.start - start, event.duration, _args(event, attribution)))
    streams: set[int] = set()
    for event in sorted((e for e in events if e.device != "cpu"), key=lambda e: (e.thread, e.start)):
        tid = DEVICE_TID + event.thread
        streams.add(tid)
        out.append(_complete(event.name, "kernel", pid, tid, event.start - start, event.duration, _args(event, attribution)))
    for tid in sorted(threads):
        label = f"thread {tid}" if tid < OVERFLOW_TID else f"thread {tid - OVERFLOW_TID} (overlapping)"
        out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": label}})
    for tid in sorted(streams):
        out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": f"device stream {tid - DEVICE_TID}"}})
    return {"traceEvents": out, "displayTimeUnit": "ms",
            "otherData": {"tool": "torchdoctor trace", "steps": len(attribution.steps), "total_us": found.get("total_us")}}


def _complete(name: str, category: str, pid: int, tid: int, offset_ns: int, duration_ns: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "cat": category, "ph": "X", "pid": pid, "tid": tid, "ts": round(max(offset_ns, 0) / 1000, 3),
            "dur": round(max(duration_ns, 0) / 1000, 3), "args": args}


def _track(event: Event, open_until: dict[int, list[int]]) -> int:
    """The event's thread, or its overflow track when it would overlap an open event there
    without nesting inside it."""
    for tid in (event.thread, OVERFLOW_TID + event.thread):
        stack = open_until.setdefault(tid, [])
        while stack and stack[-1] <= event.start:
            stack.pop()
        if not stack or event.end <= stack[-1]:
            stack.append(event.end)
            return tid
    return OVERFLOW_TID + event.thread


def _name(event: Event) -> str:
    if event.is_line:
        location, compiled = line_location(event.name)
        return location + (" [compiled]" if compiled else "")
    return event.name


def _category(event: Event) -> str:
    if event.is_line:
        return "user line"
    if event.name.startswith(BACKWARD_PREFIX):
        return "backward"
    return "op" if event.is_op else "cpu"


def _args(event: Event, attribution: Attribution) -> dict[str, Any]:
    args: dict[str, Any] = {}
    line, backward = attribution.places.get(id(event), (None, False))
    if line is not None:
        location, _ = line_location(line)
        args["backward of" if backward else "user line"] = location
    if event.shapes:
        args["shapes"] = event.shapes
    if event.dtypes:
        args["dtypes"] = event.dtypes
    if event.seq >= 0:
        args["sequence number"] = event.seq
    return args
