"""The profiler's raw (kineto) events of the traced steps, as plain `Event`s.

Read straight from `profile.profiler.kineto_results.events()`: building torch's own
FunctionEvent tree costs about a tenth of a millisecond per event, far more than the traced
steps themselves on a long trace. Shapes, dtypes and strides are read for aten ops only.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.trace.attribute import Event

#: the profiler's own bookkeeping ranges (torch/autograd/profiler_util.py `_filter_name`)
HIDDEN = (
    "profiler::_record_function_enter", "profiler::_record_function_enter_new", "profiler::_record_function_exit",
    "aten::is_leaf", "aten::output_nr", "aten::_version",
)


def collect(profile: Any) -> list[Event]:
    results = getattr(profile.profiler, "kineto_results", None)
    if results is None:
        return []
    events = []
    for raw in results.events():
        name = raw.name()
        if name in HIDDEN or _hidden(raw) or raw.is_async():  # async ranges span threads: no place in a nesting
            continue
        device = str(raw.device_type()).split(".")[-1].lower()
        is_op = name.startswith("aten::")
        events.append(Event(
            name, raw.start_thread_id(), raw.start_ns(), raw.end_ns(),
            seq=raw.sequence_nr(), fwd_thread=raw.fwd_thread_id(), corr=raw.correlation_id(),
            linked=raw.linked_correlation_id(), device=device,
            shapes=raw.shapes() if is_op else None, dtypes=raw.dtypes() if is_op else None,
            strides=_strides(raw) if name == "aten::copy_" else None,
        ))
    return events


def _hidden(raw: Any) -> bool:
    hidden = getattr(raw, "is_hidden_event", None)
    return bool(hidden()) if hidden is not None else False


def _strides(raw: Any) -> list[Any]:
    strides = getattr(raw, "structured_input_strides", None) or getattr(raw, "strides", None)
    try:
        return list(strides()) if strides is not None else []
    except RuntimeError:
        return []
