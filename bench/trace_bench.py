"""Benchmark: what `torchdoctor trace` costs a realistic CPU training script, while it traces
and after its traced steps.

The script is run_bench.py's, imported from it (a small CNN, 32x32 RGB inputs, batch 64, SGD,
a shuffled DataLoader); it times every step itself (CPU time of the training thread, one intra-op thread,
no workers: all the work is on it). Under `torchdoctor trace --skip S --steps N` its steps fall
in three phases of one process: before the trace (observed by run's hooks only: the plain
steps), the traced steps, and after the trace. The ratios compare the phases' median step
times measured in the same run, interleaved over several runs; the first and last traced steps
(where the profiler starts and stops) and the first steps of the script are left out.

Targets: traced / plain <= 2.0; after / plain <= 1.05 (tracing leaves nothing behind).

    python bench/trace_bench.py [--rounds 5] [--skip 60] [--steps 40] [--after 100]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from run_bench import TRAINING  # the same training script: it writes every step's time too

TRACED_TARGET = 2.0
AFTER_TARGET = 1.05
#: steps at the start of the script left out of the plain phase (allocator and caches warming up)
SETTLE = 20


def times_of(command: list[str], script: Path, out: Path, total: int) -> list[float]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    subprocess.run([*command, str(script), str(out), str(total), "0"], check=True, capture_output=True, env=env)
    return list(json.loads(out.read_text())["times"])


def phases(times: list[float], skip: int, steps: int) -> tuple[float, float, float]:
    """Median step time before the trace, while tracing, after it. Loop index i ends with
    optimizer step i + 1: tracing starts after step `skip` ends, so indices skip .. skip + steps
    - 1 are traced; the first and last of them start and stop the profiler and are left out."""
    return (statistics.median(times[SETTLE:skip]), statistics.median(times[skip + 1: skip + steps - 1]),
            statistics.median(times[skip + steps + 1:]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip", type=int, default=60, help="steps before the trace (the plain steps)")
    parser.add_argument("--steps", type=int, default=40, help="steps traced")
    parser.add_argument("--after", type=int, default=100, help="steps after the trace")
    args = parser.parse_args()
    total = args.skip + args.steps + args.after
    trace_cmd = [sys.executable, "-m", "torchdoctor", "trace", "--fail-on", "never", "--skip", str(args.skip), "--steps", str(args.steps)]
    run_cmd = [sys.executable, "-m", "torchdoctor", "run", "--fail-on", "never"]
    started = time.monotonic()
    traced_ratios, after_ratios, control_ratios = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "train.py"
        script.write_text(TRAINING, encoding="utf-8")
        out = Path(folder) / "times.json"
        for index in range(args.rounds):
            order = [trace_cmd, run_cmd] if index % 2 == 0 else [run_cmd, trace_cmd]
            measured = {tuple(command): times_of(command, script, out, total) for command in order}
            plain, traced, later = phases(measured[tuple(trace_cmd)], args.skip, args.steps)
            _, _, run_later = phases(measured[tuple(run_cmd)], args.skip, args.steps)
            traced_ratios.append(traced / plain)
            after_ratios.append(later / plain)
            control_ratios.append(later / run_later)
            print(f"round {index + 1}: plain {plain * 1000:.2f} ms/step, traced {traced * 1000:.2f} ({traced / plain:.3f}), "
                  f"after the trace {later * 1000:.2f} ({later / plain:.3f}); the same steps under torchdoctor run "
                  f"{run_later * 1000:.2f} ({later / run_later:.3f})", flush=True)
    traced_ratio, after_ratio, control = (statistics.median(r) for r in (traced_ratios, after_ratios, control_ratios))
    print(f"traced / plain steps: {traced_ratio:.3f} (target <= {TRACED_TARGET}); after the trace / plain: {after_ratio:.3f}, "
          f"/ the same steps of a run without the trace: {control:.3f} (target <= {AFTER_TARGET}); median of {args.rounds} "
          f"interleaved rounds, {args.steps} traced steps, CPU time of the training thread; {time.monotonic() - started:.0f} s")
    return 0 if traced_ratio <= TRACED_TARGET and min(after_ratio, control) <= AFTER_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
