"""Benchmark: what `torchdoctor run` costs the whole process, against plain `python`.

A user pays the whole process: start-up (imports, boot, the report), the warm-up where
torchdoctor observes closely, and every step after it. So each program runs to its end under
`python` and under `torchdoctor run` (default detectors, text report), and the CPU time of
the whole process tree (user + system of the runner, the script and its workers) and its wall
time are compared. The programs:

- `import`: imports torch and prints (start-up alone; target: +0.15 s CPU at most);
- `mlp`: an MLP trained from a shuffled DataLoader, steps of about 5 ms, about 10 s;
- `lm`: a small transformer language model (two encoder layers, causal mask, AdamW), steps // 10;
- `stores`: a loop that keeps a per-step tensor of every step (a history the memory account
  and the leak checks watch);
- `lab`: a long program of the lab (examples/lab/11, a silent bug found while it trains).

Pairs are interleaved (python, run; then run, python, ...) in one invocation, since the machine
is shared and noisy; the median of each program's ratios is reported, and then the cost per
detector of the `mlp` program (`torchdoctor run --profile-self`, one more run).

Target: at most 1.05x CPU on the 10-second programs.

    python bench/run_bench.py [--rounds 3] [--programs import,mlp,lm,stores,lab] [--steps 1500]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 1.05
ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "examples" / "lab" / "11_graph_cut_in_forward.py"

IMPORT = "import torch\nprint('torch', torch.__version__)\n"

MLP = '''
import sys
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
steps = int(sys.argv[1])
inputs, labels = torch.randn(8192, 256), torch.randint(0, 10, (8192,))
loader = DataLoader(TensorDataset(inputs, labels), batch_size=96, shuffle=True, drop_last=True)
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
step = 0
while step < steps:
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        step += 1
        if step % 250 == 0:
            print(f"step {step}: loss {loss.item():.3f}")
        if step == steps:
            break
'''

LM = '''
import sys
import torch
from torch import nn

torch.manual_seed(0)
steps = int(sys.argv[1]) // 10
vocab, width, length = 512, 96, 48
text = torch.randint(0, vocab, (64 * length * 8,))


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        layer = nn.TransformerEncoderLayer(width, 4, 4 * width, dropout=0.1, batch_first=True)
        self.body = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1])
        return self.head(self.body(self.embed(tokens), mask=mask, is_causal=True))


model = LanguageModel()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
for step in range(steps):
    start = torch.randint(0, text.numel() - length - 1, (16,))
    batch = torch.stack([text[s:s + length + 1] for s in start.tolist()])
    logits = model(batch[:, :-1])
    loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), batch[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 100 == 0:
        print(f"step {step}: loss {loss.item():.3f}")
'''

STORES = '''
import sys
import torch
from torch import nn

torch.manual_seed(0)
steps = int(sys.argv[1])
model = nn.Sequential(nn.Linear(128, 512), nn.Tanh(), nn.Linear(512, 128))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
losses, outputs = [], []
for step in range(steps):
    x = torch.randn(256, 128)
    out = model(x)
    loss = (out - x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.detach())
    outputs.append(out.detach()[:4].clone())  # a few rows of every step, kept to the end
print(f"last loss {torch.stack(losses)[-1].item():.4f}, {len(outputs)} outputs kept")
'''

PROGRAMS = {"import": IMPORT, "mlp": MLP, "lm": LM, "stores": STORES, "lab": None}


def measure(command: list[str]) -> tuple[float, float]:
    """(CPU seconds of the whole process tree, wall seconds) of one run to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=dict(os.environ, OMP_NUM_THREADS="1"))
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def program_command(name: str, folder: Path, steps: int) -> list[str]:
    if name == "lab":
        return [str(LAB)]
    path = folder / f"{name}.py"
    path.write_text(PROGRAMS[name] or "", encoding="utf-8")
    return [str(path), str(steps)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--programs", default="import,mlp,lm,stores,lab")
    parser.add_argument("--steps", type=int, default=1500, help="optimizer steps of mlp and stores (lm: a tenth)")
    parser.add_argument("--no-profile", action="store_true", help="skip the per-detector table")
    args = parser.parse_args()
    names = [name.strip() for name in args.programs.split(",") if name.strip()]
    unknown = [name for name in names if name not in PROGRAMS]
    if unknown:
        parser.error(f"unknown programs: {', '.join(unknown)} (choose from {', '.join(PROGRAMS)})")
    plain = [sys.executable]
    observed = [sys.executable, "-m", "torchdoctor", "run", "--fail-on", "never"]
    results: dict[str, dict[str, list[tuple[float, float]]]] = {name: {"python": [], "run": []} for name in names}
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        commands = {name: program_command(name, Path(folder), args.steps) for name in names}
        for round_ in range(args.rounds):
            for name in names:
                order = [("python", plain), ("run", observed)]
                if (round_ + names.index(name)) % 2:
                    order.reverse()
                for kind, prefix in order:
                    results[name][kind].append(measure([*prefix, *commands[name]]))
                (cpu_p, wall_p), (cpu_r, wall_r) = results[name]["python"][-1], results[name]["run"][-1]
                print(f"round {round_ + 1} {name:<7} python {cpu_p:6.2f} s CPU {wall_p:6.2f} s wall | "
                      f"run {cpu_r:6.2f} s CPU {wall_r:6.2f} s wall | {cpu_r / cpu_p:.3f}x CPU", flush=True)
        print(f"\nwhole-process cost of torchdoctor run against python (median of {args.rounds} interleaved rounds):")
        print(f"  {'program':<8} {'python CPU':>10} {'run CPU':>8} {'CPU':>7} {'+CPU s':>7} {'python wall':>11} {'run wall':>9} {'wall':>7}")
        worst = 0.0
        for name in names:
            p, r = results[name]["python"], results[name]["run"]
            cpu = statistics.median(b[0] / a[0] for a, b in zip(p, r))
            wall = statistics.median(b[1] / a[1] for a, b in zip(p, r))
            extra = statistics.median(b[0] - a[0] for a, b in zip(p, r))
            print(f"  {name:<8} {statistics.median(a[0] for a in p):>9.2f}s {statistics.median(b[0] for b in r):>7.2f}s "
                  f"{cpu:>6.3f}x {extra:>+6.2f}s {statistics.median(a[1] for a in p):>10.2f}s "
                  f"{statistics.median(b[1] for b in r):>8.2f}s {wall:>6.3f}x")
            if name != "import":
                worst = max(worst, cpu)
        if "mlp" in names and not args.no_profile:
            print("\nper-detector cost, mlp (torchdoctor run --profile-self; timing adds its own cost):")
            done = subprocess.run([*observed, "--profile-self", *commands["mlp"]], capture_output=True, text=True,
                                  env=dict(os.environ, OMP_NUM_THREADS="1"), check=True)
            table = done.stderr[done.stderr.find("profile-self:"):].splitlines()
            print("\n".join(line for line in table[:40] if not line.startswith("torchdoctor run:")))
    print(f"\nworst CPU ratio of the training programs: {worst:.3f} (target <= {TARGET}); {time.monotonic() - started:.0f} s")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
