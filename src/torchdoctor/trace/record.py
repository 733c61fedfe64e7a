"""The trace record a traced process writes: per user line, per step, and the remainder.

Plain JSON values, so the runner (which never imports torch) builds the report, the
diagnoses and the renderings from it. Times are microseconds.

No torch here: the dispatch chains of the calls are computed by the caller and passed in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torchdoctor.trace.attribute import TOP_OPS, Attribution, LineFacts, LineStats, OpStats, line_location

#: (op name, its profiled input kinds, the line's dispatch key set) -> the kernels that served it
Served = Callable[[str, list[str], list[str]], list[dict[str, str]]]
SHAPES_SHOWN = 3


def us(ns: float) -> float:
    return round(ns / 1000.0, 1)


def build(attribution: Attribution, facts: dict[str, LineFacts], served: Served | None = None,
          cpu_ns: list[int] | None = None) -> dict[str, Any]:
    """`cpu_ns`: the training thread's CPU time in each step (what the step really cost it, without
    the time another process had the core: the diagnoses trust the steps where the two agree)."""
    total = attribution.total_ns or 1
    steps = attribution.steps
    cpu = cpu_ns if cpu_ns is not None and len(cpu_ns) == len(steps) else None
    lines = sorted(attribution.lines.values(), key=lambda s: -s.total_ns)
    return {
        "type": "trace",
        "total_us": us(attribution.total_ns),
        "steps": [
            {"index": s.index, "wall_us": us(s.end - s.start), "op_us": us(s.op_ns), "data_us": us(s.data_ns),
             "data_in_process_us": us(s.data_in_process_ns), "device_us": us(s.device_ns), "kernels": s.kernels,
             "small_kernels": s.small_kernels, **({"cpu_us": us(cpu[i])} if cpu is not None else {})}
            for i, s in enumerate(steps)
        ],
        "lines": [_line(stats, facts.get(stats.key), total, steps, served) for stats in lines],
        "data_lines": [line_location(key)[0] for key in attribution.data_lines],
        "remainder": [{"name": name, "us": us(ns)} for name, ns in attribution.remainder.most_common()],
    }


def _line(stats: LineStats, facts: LineFacts | None, total: int, steps: list[Any], served: Served | None) -> dict[str, Any]:
    location, compiled = line_location(stats.key)
    keys = facts.keys[0] if facts and facts.keys else []
    return {
        "location": location,
        "file": facts.file if facts else None,
        "line": facts.line if facts else None,
        "source": facts.source if facts else "",
        "compiled": compiled,
        "calls": stats.calls,
        "us": us(stats.total_ns),
        "forward_us": us(stats.forward_ns),
        "backward_us": us(stats.backward_ns),
        "share": round(stats.total_ns / total, 4),
        "per_step_us": [us(stats.per_step_ns.get(s.index, 0)) for s in steps],
        "ops": [_op(name, op, keys, served) for name, op in _top(stats.ops)],
        "backward": {
            "nodes": dict(stats.nodes.most_common(TOP_OPS)),
            "ops": [_op(name, op, [], None) for name, op in _top(stats.backward_ops)],
        },
        "devices": sorted(facts.devices) if facts else [],
        "autocast": sorted(facts.autocast) if facts else [],
        "dispatch_keys": keys,
        "device_us": us(stats.device_ns),
        "kernels": stats.kernels,
        "syncs": stats.syncs,
        "syncs_per_step": [stats.syncs_per_step.get(s.index, 0) for s in steps],
        "float64_per_step_us": [us(stats.float64_per_step.get(s.index, 0)) for s in steps],
        "float64_device_per_step_us": [us(stats.float64_device_per_step.get(s.index, 0)) for s in steps],
        "strided_copy_per_step_us": [us(stats.strided_per_step.get(s.index, 0)) for s in steps],
        "slow_path_per_step_us": [us(stats.slow_per_step.get(s.index, 0)) for s in steps],
        "slow_paths": dict(stats.slow_paths),
    }


def _top(ops: dict[str, OpStats]) -> list[tuple[str, OpStats]]:
    """The costliest ops by self time, and every op the line called itself however cheap: a
    composite op such as aten::linear spends little time of its own, so which of them make the cut
    would otherwise depend on the machine's timings, and the op the user wrote is the one a reader
    looks for."""
    ranked = sorted(ops.items(), key=lambda item: -item[1].ns)
    return [item for index, item in enumerate(ranked) if index < TOP_OPS or item[1].direct]


def _op(name: str, op: OpStats, keys: list[str], served: Served | None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "op": name,
        "count": op.count,
        "us": us(op.ns),
        "direct": op.direct,
        "shapes": [shape for shape, _ in op.shapes.most_common(SHAPES_SHOWN) if shape],
        "dtypes": sorted(op.dtypes),
    }
    if op.copies_from_strided:
        data["copies_from_strided"] = op.copies_from_strided
        data["copies_from_strided_us"] = us(op.copies_from_strided_ns)
    if served is not None and op.direct and keys:
        data["dispatch"] = served(name, op.signature, keys)
    return data
