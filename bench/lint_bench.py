"""How fast is `torchdoctor lint`? CPU seconds against a bare `ast.parse` and TorchFix, in one run.

Usage:
    python bench/lint_bench.py [CORPUS_ROOT] [--corpora nanoGPT examples diffusers/src ...]
                               [--torchfix /path/to/venv/bin/torchfix] [--torchfix-results FILE.json]
                               [--repeat 3] [--big-file-mb 5]
    python bench/lint_bench.py --check [--target 2.0] [--repeat 2]

`--check` (CI runs it: .ci/run) lints a fixed generated corpus of training scripts
(`generated_corpus`: the same files on every machine, about 100k lines) and a bare read and
`ast.parse` of it, each in its own process, and exits 1 when lint's CPU time is more than
`--target` times the parse's (best of `--repeat` runs each). CPU time, not wall time, so a
loaded machine does not fail it; the corpus is large enough that starting Python and importing
torchdoctor (in both processes) is a small part of either.

For every corpus (a folder of Python files) it runs, each in its own process:
- `parse`: read and `ast.parse` every file lint would lint (the floor for a Python linter);
- `lint`: `torchdoctor lint --format json` with every rule;
- `torchfix`: `torchfix --select ALL -j 1` (install it in its own venv: `python3 -m venv
  /work/torchfix-venv && /work/torchfix-venv/bin/pip install torchfix`; it does not pull torch).
  TorchFix takes many minutes on large corpora: `--torchfix-results` reuses the figures of an
  earlier run (written by this script) instead of running it again; `--no-torchfix` skips it.

Then, for one generated file of `--big-file-mb` MB (0 skips it), twice: with a finding every
three lines (many findings in one big file) and as its finding-free twin of the same size.
Lint must stay linear in the size of a file however many findings it has: the many-findings
time is printed as a ratio to the finding-free time, and each lint's peak memory as a ratio
to a bare `ast.parse` of the same file (the AST is most of what lint holds).

CPU time is user + system time of the child process (`os.wait4`), so other load on the machine
does not count; peak memory is the child's maximum resident set. Results are printed as a table
and written to bench/results/lint-<time>.json (bench/results is not committed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_CORPORA = ("nanoGPT", "examples", "pytorch-image-models", "pytorch-lightning/src", "diffusers/src")
DEFAULT_TORCHFIX = Path("/work/torchfix-venv/bin/torchfix")

PARSE_FLOOR = """
import ast, sys
from pathlib import Path
from torchdoctor.linter.files import Excluder, Target, discover
count = 0
for item in discover([Path(sys.argv[1])], Excluder(None)):
    if isinstance(item, Target):
        try:
            ast.parse(item.path.read_bytes())
        except (SyntaxError, ValueError, RecursionError):
            pass
        count += 1
print(count)
"""


def measure(command: list[str], cwd: Path | None = None) -> dict[str, object]:
    """Run `command` to completion; its CPU seconds, wall seconds, peak memory and stdout."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd)
    out_chunks = []
    assert process.stdout is not None
    for chunk in iter(lambda: process.stdout.read(1 << 16), b""):  # type: ignore[union-attr]
        out_chunks.append(chunk)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return {
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "wall_s": round(time.perf_counter() - start, 3),
        "peak_mb": round(usage.ru_maxrss / 1024, 1),
        "exit": process.returncode,
        "stdout": b"".join(out_chunks).decode("utf-8", errors="replace"),
    }


#: one function, three findings (TD150 softmax without dim, TD101 probabilities into cross_entropy,
#: TD168 `require_grad` typo), and its twin of the same length with none
FINDINGS_UNIT = """
def step{i}(model, x, y, logits):
    a = F.softmax(x)
    probs = F.softmax(logits, dim=-1)
    loss = F.cross_entropy(probs.view(-1, 3), y)
    for p in model.parameters():
        p.require_grad = False
    return a, loss
"""
CLEAN_UNIT = """
def step{i}(model, x, y, logits):
    a = F.softmax(x, dim=1)
    lp = F.log_softmax(logits, dim=-1)
    loss = F.nll_loss(lp.view(-1, 3), y)
    for p in model.parameters():
        p.requires_grad = False
    return a, loss
"""
BIG_FILE_HEAD = "import torch\nimport torch.nn.functional as F\n"

PARSE_ONE = "import ast, sys; ast.parse(open(sys.argv[1], 'rb').read())"


def write_big_file(path: Path, unit: str, megabytes: float) -> int:
    """Write `unit` (numbered) until the file reaches `megabytes`; its size in bytes."""
    target = int(megabytes * 1024 * 1024)
    with open(path, "w") as handle:
        size = handle.write(BIG_FILE_HEAD)
        i = 0
        while size < target:
            size += handle.write(unit.format(i=i))
            i += 1
    return size


def bench_big_file(megabytes: float, repeat: int) -> dict[str, object]:
    """Lint one big file with many findings and its finding-free twin; ratios from this run."""
    python = sys.executable
    rows: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case, unit in (("finding-free", CLEAN_UNIT), ("many findings", FINDINGS_UNIT)):
            path = Path(tmp) / f"{case.replace(' ', '_')}.py"
            size = write_big_file(path, unit, megabytes)
            parse = best([measure([python, "-c", PARSE_ONE, str(path)]) for _ in range(repeat)])
            lint = best([measure([python, "-m", "torchdoctor", "lint", "--format", "json", "--fail-on", "never",
                                  str(path)]) for _ in range(repeat)])
            try:
                findings = len(json.loads(lint["stdout"])["findings"])  # type: ignore[arg-type]
            except (ValueError, KeyError):
                findings = None
            rows[case] = {"bytes": size, "findings": findings,
                          "parse": {k: v for k, v in parse.items() if k != "stdout"},
                          "lint": {k: v for k, v in lint.items() if k != "stdout"}}
    return rows


def big_file_table(rows: dict[str, object]) -> str:
    head = ("big file", "MB", "findings", "lint CPU s", "vs finding-free", "lint peak MB", "peak vs ast.parse")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    clean_cpu = max(float(rows["finding-free"]["lint"]["cpu_s"]), 1e-6)  # type: ignore[index]
    for case, row in rows.items():
        lint, parse = row["lint"], row["parse"]  # type: ignore[index]
        cells = [case, f"{row['bytes'] / 1024 / 1024:.1f}", f"{row['findings']:,}",  # type: ignore[index]
                 f"{lint['cpu_s']:.2f}", f"{float(lint['cpu_s']) / clean_cpu:.2f}x",
                 f"{lint['peak_mb']:.0f}", f"{float(lint['peak_mb']) / max(float(parse['peak_mb']), 1e-6):.2f}x"]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def lines_of(folder: Path) -> tuple[int, int]:
    files = lines = 0
    for path in folder.rglob("*.py"):
        if path.is_file():
            files += 1
            with open(path, "rb") as handle:
                lines += handle.read().count(b"\n")
    return files, lines


def best(runs: list[dict[str, object]]) -> dict[str, object]:
    """The run with the least CPU time (the least disturbed by the machine)."""
    return min(runs, key=lambda r: r["cpu_s"])  # type: ignore[arg-type, return-value]


def bench_corpus(folder: Path, args: argparse.Namespace, previous: dict[str, dict[str, object]]) -> dict[str, object]:
    files, lines = lines_of(folder)
    python = sys.executable
    parse = best([measure([python, "-c", PARSE_FLOOR, str(folder)]) for _ in range(args.repeat)])
    lint_runs = [measure([python, "-m", "torchdoctor", "lint", "--format", "json", "--fail-on", "never", str(folder)])
                 for _ in range(args.repeat)]
    lint = best(lint_runs)
    try:
        findings = len(json.loads(lint["stdout"])["findings"])  # type: ignore[arg-type]
    except (ValueError, KeyError):
        findings = None
    row: dict[str, object] = {
        "corpus": str(folder), "files": files, "lines": lines,
        "parse": {k: v for k, v in parse.items() if k != "stdout"},
        "lint": {k: v for k, v in lint.items() if k != "stdout"},
        "lint_findings": findings,
    }
    key = str(folder)
    if key in previous:
        row["torchfix"] = previous[key]
    elif args.torchfix is not None and not args.no_torchfix:
        run = measure([str(args.torchfix), "--select", "ALL", "-j", "1", str(folder)])
        row["torchfix"] = {k: v for k, v in run.items() if k != "stdout"}
        row["torchfix"]["findings"] = sum(1 for line in str(run["stdout"]).splitlines() if ": TOR" in line)  # type: ignore[index]
    return row


def table(rows: list[dict[str, object]]) -> str:
    head = ("corpus", "files", "lines", "parse CPU s", "lint CPU s", "lint/parse", "lint lines/s", "lint peak MB",
            "TorchFix CPU s", "TorchFix/lint")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        parse, lint = row["parse"], row["lint"]
        tf = row.get("torchfix")
        lint_cpu = max(float(lint["cpu_s"]), 1e-6)  # type: ignore[index, arg-type]
        cells = [
            str(row["name"]),
            f"{row['files']:,}", f"{row['lines']:,}", f"{parse['cpu_s']:.2f}", f"{lint_cpu:.2f}",  # type: ignore[index]
            f"{lint_cpu / max(float(parse['cpu_s']), 1e-6):.2f}x",  # type: ignore[index, arg-type]
            f"{int(row['lines']) / lint_cpu:,.0f}", f"{lint['peak_mb']:.0f}",  # type: ignore[index, call-overload]
            f"{tf['cpu_s']:.1f}" if tf else "-",  # type: ignore[index]
            f"{float(tf['cpu_s']) / lint_cpu:.0f}x" if tf else "-",  # type: ignore[index, arg-type]
        ]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


#: one generated training script: a model, a dataset, a training and an evaluation function,
#: and the script that builds and runs them (`{i}` and the other fields vary from file to file)
SCRIPT = '''"""Generated training script {i}: a {layers}-layer {net} on random data."""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class {net}(nn.Module):
    def __init__(self, features: int = {width}, classes: int = {classes}, dropout: float = 0.{drop}):
        super().__init__()
        self.embed = nn.Linear(features, {hidden})
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear({hidden}, {hidden}), nn.GELU(), nn.Dropout(dropout))
                                     for _ in range({layers})])
        self.norm = nn.LayerNorm({hidden})
        self.head = nn.Linear({hidden}, classes)

    def forward(self, x):
        h = self.embed(x)
        for block in self.blocks:
            h = h + block(h)
        h = self.norm(h)
        return self.head(h)


class RandomSet{i}(Dataset):
    def __init__(self, size: int, features: int = {width}, classes: int = {classes}, seed: int = {i}):
        generator = torch.Generator().manual_seed(seed)
        self.x = torch.randn(size, features, generator=generator)
        self.y = torch.randint(0, classes, (size,), generator=generator)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, index):
        return self.x[index], self.y[index]


def accuracy(logits, labels):
    predictions = logits.argmax(dim=-1)
    return (predictions == labels).float().mean().item()


def train_epoch(model, loader, optimizer, device, clip: float = {clip}.0):
    model.train()
    total, batches = 0.0, 0
    for inputs, labels in loader:
        inputs, labels = inputs.to(device), labels.to(device)
        optimizer.zero_grad()
        logits = model(inputs)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        total += loss.item()
        batches += 1
    return total / max(batches, 1)


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct, seen = 0.0, 0
    for inputs, labels in loader:
        inputs, labels = inputs.to(device), labels.to(device)
        logits = model(inputs)
        correct += accuracy(logits, labels) * len(labels)
        seen += len(labels)
    return correct / max(seen, 1)


def warmup_cosine(step: int, warmup: int = {warmup}, total: int = {total}) -> float:
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(total - warmup, 1)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default={epochs})
    parser.add_argument("--batch-size", type=int, default={batch})
    parser.add_argument("--lr", type=float, default={lr})
    args = parser.parse_args(argv)
    torch.manual_seed({i})
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = {net}().to(device)
    optimizer = torch.optim.{optimizer}(model.parameters(), lr=args.lr, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine)
    train_loader = DataLoader(RandomSet{i}({size}), batch_size=args.batch_size, shuffle=True)
    val_loader = DataLoader(RandomSet{i}({size} // 4, seed={i} + 1), batch_size=args.batch_size)
    best = 0.0
    for epoch in range(args.epochs):
        loss = train_epoch(model, train_loader, optimizer, device)
        scheduler.step()
        score = evaluate(model, val_loader, device)
        if score > best:
            best = score
            torch.save({{"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}},
                       "checkpoint_{i}.pt")
        print(f"epoch {{epoch}}: loss {{loss:.4f}}, accuracy {{score:.3f}}")
    return best


if __name__ == "__main__":
    main()
'''
#: files of the generated corpus (about 120 lines each)
CORPUS_FILES = 800
#: lint CPU / parse CPU that --check allows by default (issue 26)
TARGET = 2.0


def generated_corpus(folder: Path, files: int = CORPUS_FILES) -> list[Path]:
    """Write the fixed corpus of `--check` into `folder`: `files` training scripts, the same
    bytes on every run and machine (the fields are drawn from a seeded generator)."""
    import random

    draw = random.Random(26)
    paths = []
    for i in range(files):
        fields = {
            "i": i, "net": f"{draw.choice(['Mlp', 'Residual', 'Tower', 'Classifier'])}Net{i}",
            "layers": draw.randint(2, 8), "width": draw.choice([16, 32, 64, 128]),
            "hidden": draw.choice([64, 128, 256, 512]), "classes": draw.randint(2, 100), "drop": draw.randint(0, 5),
            "clip": draw.randint(1, 5), "warmup": draw.choice([10, 100, 500]), "total": draw.choice([1000, 5000]),
            "epochs": draw.randint(1, 30), "batch": draw.choice([16, 32, 64, 128]),
            "lr": draw.choice(["1e-3", "3e-4", "0.01", "0.1"]), "size": draw.choice([256, 1024, 4096]),
            "optimizer": draw.choice(["AdamW", "Adam", "SGD", "RMSprop"]),
        }
        path = folder / f"train_{i:04d}.py"
        path.write_text(SCRIPT.format(**fields))
        paths.append(path)
    return paths


def check(target: float, repeat: int, files: int = CORPUS_FILES) -> int:
    """Lint the generated corpus and parse it, `repeat` times each, interleaved; 0 when the
    best lint CPU time is at most `target` times the best parse CPU time, else 1."""
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        folder.mkdir()
        generated_corpus(folder, files)
        parses, lints = [], []
        for _ in range(repeat):
            parses.append(measure([python, "-c", PARSE_FLOOR, str(folder)]))
            lints.append(measure([python, "-m", "torchdoctor", "lint", "--format", "json", "--fail-on", "never",
                                  str(folder)]))
    parse, lint = best(parses), best(lints)
    if lint["exit"] != 0 or parse["exit"] != 0:
        print(f"lint bench: lint exited {lint['exit']}, parse {parse['exit']}", file=sys.stderr)
        return 1
    ratio = float(lint["cpu_s"]) / max(float(parse["cpu_s"]), 1e-6)  # type: ignore[arg-type]
    verdict = "ok" if ratio <= target else "too slow"
    print(f"lint bench: {files} generated files: lint {lint['cpu_s']:.2f} CPU s, parse {parse['cpu_s']:.2f} CPU s: "
          f"{ratio:.2f}x the parse (target {target:g}x): {verdict}")
    return 0 if ratio <= target else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default="/work/corpus", type=Path, help="folder holding the corpora")
    parser.add_argument("--corpora", nargs="+", default=list(DEFAULT_CORPORA), help="sub-folders of ROOT to measure")
    parser.add_argument("--torchfix", type=Path, default=DEFAULT_TORCHFIX if DEFAULT_TORCHFIX.exists() else None)
    parser.add_argument("--torchfix-results", type=Path, help="reuse TorchFix figures from an earlier results file")
    parser.add_argument("--no-torchfix", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="runs of parse and lint per corpus (the fastest counts)")
    parser.add_argument("--big-file-mb", type=float, default=5.0,
                        help="size of the generated one-file case (many findings vs none); 0 skips it")
    parser.add_argument("--check", action="store_true",
                        help="lint a fixed generated corpus; exit 1 when lint/parse CPU exceeds --target")
    parser.add_argument("--target", type=float, default=TARGET, help="the lint/parse CPU ratio --check allows")
    parser.add_argument("--files", type=int, default=CORPUS_FILES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.check:
        return check(args.target, args.repeat if "--repeat" in (argv or sys.argv) else 2, args.files)
    previous: dict[str, dict[str, object]] = {}
    if args.torchfix_results:
        for row in json.loads(args.torchfix_results.read_text())["rows"]:
            if "torchfix" in row:
                previous[row["corpus"]] = row["torchfix"]
    rows = []
    for name in args.corpora:
        folder = args.root / name
        if not folder.is_dir():
            print(f"skipping {folder}: not a folder", file=sys.stderr)
            continue
        print(f"measuring {folder} ...", file=sys.stderr, flush=True)
        rows.append({"name": name, **bench_corpus(folder, args, previous)})
    if rows:
        print(table(rows))
    big: dict[str, object] = {}
    if args.big_file_mb > 0:
        print(f"measuring one generated {args.big_file_mb:g} MB file, with and without findings ...",
              file=sys.stderr, flush=True)
        big = bench_big_file(args.big_file_mb, args.repeat)
        print(("\n" if rows else "") + big_file_table(big))
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    path = results / time.strftime("lint-%Y%m%d-%H%M%S.json")
    path.write_text(json.dumps({"python": sys.version.split()[0], "rows": rows, "big_file": big}, indent=2))
    print(f"\nwritten to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
