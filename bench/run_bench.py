"""Benchmark: the steady-state cost of `torchdoctor run` on a realistic CPU training script.

The script trains a small CNN (two conv blocks and a linear head, 32x32 RGB inputs, batch 64)
from a shuffled DataLoader for a few hundred steps, with the usual zero_grad / forward /
cross-entropy / backward / step and a loss print every 50 steps. It times every step itself
and reports the median step time after its first steps (the warm-up, where torchdoctor
observes closely, is excluded: that is the steady state a long run lives in). Step time is
the CPU time of the training thread (one intra-op thread, no DataLoader workers, so all the
work is on it): on a shared machine it is far less noisy than wall-clock time, and it counts
exactly what observing adds, which runs on that thread.

The same script runs under plain `python` and under `torchdoctor run` (with the default
detectors), interleaved over several rounds, alternating which goes first: the machine is
noisy, and the ratio of the medians is what is reported.

Target: at most 1.05.

    python bench/run_bench.py [--rounds 11] [--steps 300]
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

TARGET = 1.05

TRAINING = '''
import json, statistics, sys, time
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(1)
steps, skip = int(sys.argv[2]), int(sys.argv[3])
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
json.dump({"median": statistics.median(times[skip:]), "steps": len(times), "times": times}, open(sys.argv[1], "w"))
'''


def one(command: list[str], script: Path, out: Path, steps: int, skip: int) -> float:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    subprocess.run([*command, str(script), str(out), str(steps), str(skip)], check=True, capture_output=True, env=env)
    return float(json.loads(out.read_text())["median"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--skip", type=int, default=20, help="first steps left out of the median (warm-up)")
    args = parser.parse_args()
    plain_cmd = [sys.executable]
    observed_cmd = [sys.executable, "-m", "torchdoctor", "run", "--fail-on", "never"]
    plain: list[float] = []
    observed: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "train_cnn.py"
        script.write_text(TRAINING, encoding="utf-8")
        out = Path(folder) / "result.json"
        started = time.monotonic()
        for round_ in range(args.rounds):
            order = [("python", plain_cmd, plain), ("torchdoctor run", observed_cmd, observed)]
            if round_ % 2:
                order.reverse()
            for _name, command, results in order:
                results.append(one(command, script, out, args.steps, args.skip))
            print(
                f"round {round_ + 1}: python {plain[-1] * 1e3:.2f} ms/step, "
                f"torchdoctor run {observed[-1] * 1e3:.2f} ms/step (CPU time), ratio {observed[-1] / plain[-1]:.3f}",
                flush=True,
            )
    ratio = statistics.median(observed) / statistics.median(plain)
    best = min(observed) / min(plain)  # noise only adds time: the fastest rounds are the cleanest
    print(
        f"steady-state step time under torchdoctor run / python: {ratio:.3f} "
        f"(median of {args.rounds} interleaved rounds, {args.steps} steps each, first {args.skip} excluded; "
        f"fastest rounds: {best:.3f}; target <= {TARGET}; {time.monotonic() - started:.0f} s)"
    )
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
