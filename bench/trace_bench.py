"""Benchmark: what `torchdoctor trace` costs a realistic CPU training script, while it traces
and after its traced steps.

The script is run_bench.py's (a small CNN, 32x32 RGB inputs, batch 64, SGD, a shuffled
DataLoader); it times every step itself (CPU time of the training thread, one intra-op thread,
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

TRACED_TARGET = 2.0
AFTER_TARGET = 1.05
#: steps at the start of the script left out of the plain phase (allocator and caches warming up)
SETTLE = 20

TRAINING = '''
import json, sys, time
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(1)
steps = int(sys.argv[2])
images, labels = torch.randn(2048, 3, 32, 32), torch.randint(0, 10, (2048,))
loader = DataLoader(TensorDataset(images, labels), batch_size=64, shuffle=True, drop_last=True)
model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(32 * 8 * 8, 10),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()
times, step = [], 0
while step < steps:
    batches = iter(loader)
    while step < steps:
        started = time.thread_time()
        try:
            x, y = next(batches)
        except StopIteration:
            break
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            print(f"step {step}: loss {loss.item():.3f}")
        times.append(time.thread_time() - started)
        step += 1
json.dump({"times": times}, open(sys.argv[1], "w"))
'''


def one_run(script: Path, out: Path, skip: int, steps: int, after: int) -> tuple[float, float, float]:
    total = skip + steps + after
    env = dict(os.environ, OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "torchdoctor", "trace", "--skip", str(skip), "--steps", str(steps),
               "--format", "json", "--output", str(out.with_suffix(".report.json")), str(script), str(out), str(total)]
    subprocess.run(command, check=True, capture_output=True, env=env)
    times = json.loads(out.read_text())["times"]
    # loop index i ends with optimizer step i + 1: tracing starts after step `skip` ends, so
    # indices skip .. skip + steps - 1 are traced; the first and last of them start and stop it
    plain = times[SETTLE:skip]
    traced = times[skip + 1: skip + steps - 1]
    later = times[skip + steps + 1:]
    return statistics.median(plain), statistics.median(traced), statistics.median(later)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip", type=int, default=60, help="steps before the trace (the plain steps)")
    parser.add_argument("--steps", type=int, default=40, help="steps traced")
    parser.add_argument("--after", type=int, default=100, help="steps after the trace")
    args = parser.parse_args()
    started = time.monotonic()
    traced_ratios, after_ratios = [], []
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "train.py"
        script.write_text(TRAINING, encoding="utf-8")
        for index in range(args.rounds):
            plain, traced, later = one_run(script, Path(folder) / f"times{index}.json", args.skip, args.steps, args.after)
            traced_ratios.append(traced / plain)
            after_ratios.append(later / plain)
            print(f"round {index + 1}: plain {plain * 1000:.2f} ms/step, traced {traced * 1000:.2f} ms/step "
                  f"({traced / plain:.3f}), after the trace {later * 1000:.2f} ms/step ({later / plain:.3f})")
    traced_ratio, after_ratio = statistics.median(traced_ratios), statistics.median(after_ratios)
    seconds = time.monotonic() - started
    print(f"traced / plain steps: {traced_ratio:.3f} (target <= {TRACED_TARGET}); after the trace / plain: "
          f"{after_ratio:.3f} (target <= {AFTER_TARGET}); median of {args.rounds} runs, {args.steps} traced steps, "
          f"CPU time of the training thread; {seconds:.0f} s")
    return 0 if traced_ratio <= TRACED_TARGET and after_ratio <= AFTER_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
