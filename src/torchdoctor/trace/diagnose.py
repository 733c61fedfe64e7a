"""Performance diagnoses from a trace record: each a rule, decided on ratios of one run.

Every verdict compares times measured in the same process over the same steps (a line's
share of the step, the device's busy share, data wait against the step), with wide margins,
and most need the condition in every traced step: a busy machine slows the whole step, so the
ratios, and the verdicts, stay put; a line's cost is read against the time of all the step's
ops on the same clock, step by step (`cost_share`; data wait: `clean_share`;
tests/trace/test_lab.py runs the lab pairs under a CPU hog). The
GPU-only ones (launch-bound steps, host-device syncs, CPU work in a GPU run, autocast for the
wrong device) read facts only a GPU run records; they are tested with records made by hand.

No torch here.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Mapping
from typing import Any

from torchdoctor.core.finding import Finding, Severity
from torchdoctor.core.rule import Rule
from torchdoctor.rules.dtype.autocast_for_another_device import RULE as AUTOCAST_DEVICE
from torchdoctor.rules.performance.cpu_ops_in_device_run import RULE as CPU_OPS
from torchdoctor.rules.performance.float64_ops_in_float32_model import RULE as FLOAT64_OPS
from torchdoctor.rules.performance.host_sync_every_step import RULE as HOST_SYNC
from torchdoctor.rules.performance.input_bound_loader import RULE as INPUT_BOUND
from torchdoctor.rules.performance.launch_bound_steps import RULE as LAUNCH_BOUND
from torchdoctor.rules.performance.slow_kernel_fallback import RULE as SLOW_KERNEL
from torchdoctor.rules.performance.strided_copy_on_hot_line import RULE as STRIDED_COPY
from torchdoctor.trace.attribute import NON_COMPUTE, SLOW_PATHS

Record = dict[str, Any]
#: run the GPU-only verdicts on a CPU run (tests and doc proofs on machines without a GPU),
#: as run's GPU-only detectors do
ENV_DEVICE_CHECKS_ON_CPU = "TORCHDOCTOR_DEVICE_CHECKS_ON_CPU"
DEVICES = ("cuda", "mps", "xpu", "hpu")

#: launch-bound: this many kernels per step at least, most of them short, the device mostly idle
LAUNCH_MIN_KERNELS = 100
LAUNCH_SMALL_SHARE = 0.75
LAUNCH_MAX_BUSY = 0.5
#: float64 ops: the parameters are float32, and float64 compute takes this share of a step
#: (`cost_share`; on a GPU, of the device's busy time)
FLOAT32_MODEL = 0.9
FLOAT64_SHARE = 0.10
#: CPU compute in a device run: the line's CPU compute takes this share of the step's wall time
CPU_OPS_SHARE = 0.20
#: strided copies: in every traced step, and this share of a step (`cost_share`)
STRIDED_SHARE = 0.10
#: fallback kernels: in every traced step, and this share of a step (`cost_share`)
SLOW_SHARE = 0.10
#: data wait: the step waits for the DataLoader this share of its wall time (`clean_share`):
#: the loader takes twice as long as the rest of the step (per-sample indexing and collate of a
#: small model's batches can take as long as the model: that is not the bug)
DATA_SHARE = 2 / 3


def diagnose(record: Record) -> list[Finding]:
    findings: list[Finding] = []
    for check in CHECKS:
        findings.extend(check(record))
    return findings


def on_device(record: Record) -> bool:
    """A run whose trained parameters are (mostly) on an accelerator, or any run when the
    GPU-only checks are asked to treat the CPU as one."""
    if os.environ.get(ENV_DEVICE_CHECKS_ON_CPU) == "1":
        return True
    devices = (record.get("parameters") or {}).get("devices") or {}
    total = sum(devices.values())
    return bool(total) and sum(n for d, n in devices.items() if d in DEVICES) >= 0.9 * total


def _share(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


def _steps(record: Record) -> list[Record]:
    return list(record.get("steps") or [])


def _at(line: Record) -> tuple[str | None, int | None]:
    return line.get("file") or line.get("location", "").rsplit(":", 1)[0] or None, line.get("line")


def _finding(rule: Rule, line: Record | None, *, fields: Mapping[str, Any] | None = None, severity: Severity | None = None,
             variant: str | None = None, evidence: dict[str, Any] | None = None) -> Finding:
    """A finding at the line's place, as `Rule.finding` makes it."""
    file, number = _at(line) if line is not None else (None, None)
    return rule.finding(fields=fields, file=file, line=number, severity=severity, evidence=evidence, variant=variant)


def _pct(value: float) -> str:
    return f"{value:.0%}"


def _ms(us: float) -> str:
    return f"{us / 1000:.2f} ms"


def launch_bound(record: Record) -> list[Finding]:
    steps = _steps(record)
    if not steps or not on_device(record):
        return []
    for step in steps:
        kernels = step.get("kernels", 0)
        if kernels < LAUNCH_MIN_KERNELS or _share(step.get("small_kernels", 0), kernels) < LAUNCH_SMALL_SHARE:
            return []
        if _share(step.get("device_us", 0), step.get("wall_us", 0)) > LAUNCH_MAX_BUSY:
            return []
    kernels = statistics.median(s["kernels"] for s in steps)
    small = statistics.median(_share(s["small_kernels"], s["kernels"]) for s in steps)
    busy = statistics.median(_share(s["device_us"], s["wall_us"]) for s in steps)
    lines = sorted(record.get("lines") or [], key=lambda line: -line.get("kernels", 0))
    top = lines[0] if lines and lines[0].get("kernels") else None
    where = f"; most are launched by this line ({top['kernels'] // max(len(steps), 1)} per step)" if top else ""
    return [_finding(
        LAUNCH_BOUND, top, fields={"busy": _pct(busy), "kernels": int(kernels), "small": _pct(small), "where": where},
        evidence={"kernels_per_step": kernels, "small_share": round(small, 3), "device_busy": round(busy, 3)},
    )]


def host_syncs(record: Record) -> list[Finding]:
    steps = _steps(record)
    if not steps or not on_device(record):
        return []
    found = []
    for line in record.get("lines") or []:
        per_step = line.get("syncs_per_step") or []
        if len(per_step) != len(steps) or min(per_step, default=0) < 1:
            continue
        count = min(per_step)
        ops = ", ".join(op["op"] for op in line.get("ops") or [] if op["op"] in ("aten::_local_scalar_dense", "aten::nonzero",
                                                                                   "aten::copy_", "aten::_to_copy"))
        found.append(_finding(
            HOST_SYNC, line, severity=Severity.WARNING if count >= 3 else Severity.INFO, variant="traced",
            fields={"count": count, "ops": f" ({ops})" if ops else ""},
            evidence={"per_step": per_step, "line": line.get("location")},
        ))
    return found


def _params_share(record: Record, dtype: str) -> float:
    dtypes = (record.get("parameters") or {}).get("dtypes") or {}
    return _share(dtypes.get(dtype, 0), sum(dtypes.values()))


def clean_share(parts: list[float], wholes: list[float], steps: list[Record]) -> float:
    """A part's share of a whole over the traced steps, from the steps where the training thread
    had the CPU: a process that loses its core to another one in the middle of an op makes that
    op look longer, so the steps whose CPU time (`cpu_us`) is closest to their wall time are the
    ones to read. The better half of the steps is used (all of them when the CPU time was not
    recorded); a CPU hog that slows every op alike changes no share."""
    if not parts or len(parts) != len(wholes) or len(wholes) != len(steps):
        return 0.0
    order = list(range(len(steps)))
    if all("cpu_us" in step for step in steps):
        order.sort(key=lambda i: -_share(steps[i]["cpu_us"], steps[i].get("wall_us", 0)))
        order = order[: max(2, (len(order) + 1) // 2)]
    return _share(sum(parts[i] for i in order), sum(wholes[i] for i in order))


def cost_share(parts: list[float], steps: list[Record]) -> float:
    """What a line's ops of one kind cost a step: in each traced step, their time against the
    time of the step's ops outside the DataLoader's fetches (whose many small indexing ops the
    profiler slows most; data wait has its own rule), both on the profiler's clock in that step;
    the median over the steps. A busy machine stretches both sides of each step alike, so the
    share stays where it is (a CPU-time denominator does not: the thread's CPU time leaves out
    the time it waited for a core, which its ops' wall times include)."""
    if not steps or len(parts) != len(steps):
        return 0.0
    wholes = [max(step.get("op_us", 0) - step.get("data_in_process_us", 0), part) for part, step in zip(parts, steps)]
    return statistics.median(_share(part, whole) for part, whole in zip(parts, wholes))


def float64_ops(record: Record) -> list[Finding]:
    steps = _steps(record)
    if not steps or _params_share(record, "float32") < FLOAT32_MODEL:
        return []
    device = on_device(record) and os.environ.get(ENV_DEVICE_CHECKS_ON_CPU) != "1"
    found = []
    for line in record.get("lines") or []:
        if device:  # on a GPU the cost is the kernels' time on the device
            share = _share(statistics.median(line.get("float64_device_per_step_us") or [0]),
                           statistics.median(step.get("device_us", 0) for step in steps))
        else:
            share = cost_share(line.get("float64_per_step_us") or [], steps)
        if share < FLOAT64_SHARE:
            continue
        forward = [op for op in line.get("ops") or [] if _float64_compute(op)]
        ops = forward or [op for op in (line.get("backward") or {}).get("ops") or [] if _float64_compute(op)]
        names = ", ".join(f"{op['op']} ({op['count'] / len(steps):g} per step)" for op in ops[:3]) or "its ops"
        found.append(_finding(
            FLOAT64_OPS, line, fields={"ops": names, "share": _pct(share)},
            evidence={"float64_per_step_us": line.get("float64_per_step_us"), "ops": [op["op"] for op in ops]},
        ))
    return found


def _float64_compute(op: Record) -> bool:
    return "float64" in op.get("dtypes", []) and op["op"] not in NON_COMPUTE


def cpu_ops(record: Record) -> list[Finding]:
    steps = _steps(record)
    if not steps or not on_device(record) or os.environ.get(ENV_DEVICE_CHECKS_ON_CPU) == "1":
        return []  # (no CPU stand-in: on a CPU run every op is a CPU op)
    wall = sum(s.get("wall_us", 0) for s in steps)
    data_lines = set(record.get("data_lines") or [])
    found = []
    for line in record.get("lines") or []:
        if line.get("devices") != ["cpu"] or line.get("location") in data_lines:
            continue
        ops = [op for op in line.get("ops") or [] if op["op"] not in NON_COMPUTE]
        time = sum(op["us"] for op in ops)
        if not ops or _share(time, wall) < CPU_OPS_SHARE:
            continue
        found.append(_finding(
            CPU_OPS, line, fields={"ops": ", ".join(op["op"] for op in ops[:3]), "share": _pct(_share(time, wall))},
            evidence={"cpu_us": round(time, 1), "wall_us": round(wall, 1)},
        ))
    return found


def strided_copies(record: Record) -> list[Finding]:
    steps = _steps(record)
    found = []
    for line in record.get("lines") or []:
        per_step = line.get("strided_copy_per_step_us") or []
        if not steps or len(per_step) != len(steps) or min(per_step) <= 0:
            continue  # not in every traced step
        share = cost_share(per_step, steps)
        if share < STRIDED_SHARE:
            continue
        copies = [op for op in line.get("ops") or [] if op.get("copies_from_strided")]
        count = sum(op.get("copies_from_strided", 0) for op in copies)
        shapes = next((op["shapes"][0] for op in copies if op.get("shapes")), "")
        found.append(_finding(
            STRIDED_COPY, line, fields={"copies": max(count // len(steps), 1), "share": _pct(share),
                                        "shape": f" ({shapes.split(',')[0]})" if shapes else ""},
            evidence={"copies": count, "strided_copy_per_step_us": per_step},
        ))
    return found


def autocast_device(record: Record) -> list[Finding]:
    found = []
    for line in record.get("lines") or []:
        autocast, devices, ops = set(line.get("autocast") or []), set(line.get("devices") or []), line.get("autocast_ops") or []
        if not autocast or not devices or autocast & devices or not ops:
            continue
        found.append(_finding(
            AUTOCAST_DEVICE, line, fields={"autocast": ", ".join(sorted(autocast)), "devices": ", ".join(sorted(devices)),
                                           "ops": ", ".join(ops[:3])}, evidence={"autocast": sorted(autocast), "devices": sorted(devices), "ops": ops},
        ))
    return found


def data_wait(record: Record) -> list[Finding]:
    """Only batches made in the training process (num_workers=0): how long worker processes take
    depends on how busy the machine is, the training process's own work does not."""
    steps = _steps(record)
    if not steps:
        return []
    shares = [_share(s.get("data_in_process_us", 0), s.get("wall_us", 0)) for s in steps]
    share = clean_share([s.get("data_in_process_us", 0) for s in steps], [s.get("wall_us", 0) for s in steps], steps)
    if share < DATA_SHARE:
        return []
    data_lines = record.get("data_lines") or []
    line = next((line for line in record.get("lines") or [] if line.get("location") in data_lines[:1]), None)
    data = statistics.median(s.get("data_in_process_us", 0) for s in steps)
    wall = statistics.median(s.get("wall_us", 0) for s in steps)
    return [_finding(
        INPUT_BOUND, line, variant="traced", fields={"share": _pct(share), "data": _ms(data), "wall": _ms(wall)},
        evidence={"data_share_per_step": [round(s, 3) for s in shares], "data_us": data, "wall_us": wall},
    )]


def slow_paths(record: Record) -> list[Finding]:
    """Fallback kernels on a line; attention's only on a device (on the CPU the math kernel is
    also the one for attention with dropout, however the call is written)."""
    steps = _steps(record)
    device = on_device(record)
    found = []
    for line in record.get("lines") or []:
        per_step = line.get("slow_path_per_step_us") or []
        if not steps or len(per_step) != len(steps) or min(per_step) <= 0:
            continue
        ops = [op for op in line.get("slow_paths") or {} if device or SLOW_PATHS.get(op) != "attention"]
        share = cost_share(per_step, steps) if ops else 0.0
        if share < SLOW_SHARE:
            continue
        what = SLOW_PATHS[ops[0]]
        variant, fields = _slow_path(what, record)
        found.append(_finding(SLOW_KERNEL, line, variant=variant,
                              fields={"ops": ", ".join(ops[:3]), "share": _pct(share), **fields},
                              evidence={"ops": ops, "slow_path_per_step_us": per_step}))
    return found


def _slow_path(what: str, record: Record) -> tuple[str | None, dict[str, str]]:
    """The rule's variant for the slow path `what` takes, and its fields: the library's kernel
    missed and, when the library is off, its switch."""
    if what == "attention":
        return "attention", {}
    backends = record.get("backends") or {}
    device = on_device(record) and os.environ.get(ENV_DEVICE_CHECKS_ON_CPU) != "1"
    fast = "cuDNN" if device else "oneDNN (mkldnn)"
    if backends.get("cudnn" if device else "mkldnn") is not False:
        return None, {"fast": fast}
    flag = "torch.backends.cudnn.enabled" if device else "torch.backends.mkldnn.enabled"
    return "cudnn-off" if device else "library-off", {"fast": fast, "flag": flag, "backend": flag.removesuffix(".enabled")}


CHECKS: tuple[Callable[[Record], list[Finding]], ...] = (
    launch_bound, host_syncs, float64_ops, cpu_ops, strided_copies, slow_paths, autocast_device, data_wait,
)
