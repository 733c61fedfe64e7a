"""Benchmark: the full `torchdoctor check` of a ResNet-18-sized model, against a plain step.

The model is a ResNet-18 written here (no torchvision): 11.7 M parameters, batch 8 x 3 x 224 x
224, on the CPU, trained with SGD. The baseline is one plain training step (zero_grad,
forward, cross-entropy, backward, step) measured in the same run, median of a few after a
warm-up; the check's wall time is reported as a multiple of it.

Target: the full check takes at most 40 step-equivalents.

    python bench/check_bench.py [--repeats 3] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

import torchdoctor

TARGET = 40.0


class Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet18(nn.Module):
    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)
        )
        widths = [(64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)]
        self.layers = nn.Sequential(*[
            nn.Sequential(Block(cin, cout, stride), Block(cout, cout, 1)) for cin, cout, stride in widths
        ])
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


def plain_step_seconds(model: nn.Module, x: torch.Tensor, y: torch.Tensor, repeats: int) -> float:
    """Median time of a plain training step, on a throwaway copy of the setup."""
    import copy

    model = copy.deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    times = []
    for _ in range(repeats + 1):  # the first one warms up
        started = time.perf_counter()
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
        times.append(time.perf_counter() - started)
    return statistics.median(times[1:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="plain steps to time (after one warm-up)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    model = ResNet18()
    x = torch.randn(args.batch, 3, 224, 224, generator=generator)
    y = torch.randint(0, 1000, (args.batch,), generator=generator)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    params = sum(p.numel() for p in model.parameters())

    step = plain_step_seconds(model, x, y, args.repeats)
    started = time.perf_counter()
    report = torchdoctor.check(model, (x, y), nn.CrossEntropyLoss(), optimizer, progress=False)
    check = time.perf_counter() - started
    ratio = check / step

    per_check = {c.name: round(c.seconds / step, 2) for c in report.checks}
    result = {
        "model": f"ResNet-18 ({params / 1e6:.1f} M parameters), batch {args.batch}x3x224x224, CPU, {torch.get_num_threads()} threads",
        "plain_step_seconds": round(step, 3),
        "check_seconds": round(check, 2),
        "step_equivalents": round(ratio, 1),
        "target": TARGET,
        "per_check_step_equivalents": per_check,
        "findings": [f"{f.rule} {f.message}" for f in report.findings],
        "statuses": {c.name: c.status.value for c in report.checks},
    }
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "check_bench.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"{result['model']}")
    print(f"plain training step: {step:.3f} s")
    print(f"torchdoctor check:   {check:.2f} s = {ratio:.1f} step-equivalents (target <= {TARGET:.0f})")
    for name, value in per_check.items():
        print(f"  {name:20s} {value:6.2f}")
    for finding in result["findings"]:
        print(f"  finding: {finding}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
