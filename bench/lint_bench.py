"""How fast is `torchdoctor lint`? CPU seconds against a bare `ast.parse` and TorchFix, in one run.

Usage:
    python bench/lint_bench.py [CORPUS_ROOT] [--corpora nanoGPT examples diffusers/src ...]
                               [--torchfix /path/to/venv/bin/torchfix] [--torchfix-results FILE.json]
                               [--repeat 3] [--big-file-mb 5]

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
from torchdoctor.lint.files import Excluder, Target, discover
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
    args = parser.parse_args(argv)
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
