"""Compatibility: the lab, the rule-doc proofs and the run/trace/compile tests on each torch and Python.

torchdoctor leans on torch internals (dynamo, the profiler, autograd graph metadata, saved-tensor
hooks) that change between releases, so the floors in pyproject.toml (`requires-python`, `torch>=`)
are what this script shows working. Each environment is a virtual environment with torch
installed; the tests of this tree run in it (PYTHONPATH=src, so the tree is what is tested, not
an installed copy), part by part:

- `lab`: the lab programs (examples/lab) under run, trace, lint and check, each bug found at its
  line and each fixed twin silent (tests/{run,trace,lint,health}/test_lab.py);
- `proofs`: every rule's doc example triggers it and its "Use instead" code does not
  (tests/rules/test_docs.py: lint, check, run, trace, env and dist harnesses);
- `run`, `trace`: the rest of tests/run and tests/trace;
- `compile`: `torch.compile`d code under run (tests/observe/test_compiled.py).

    python bench/compat.py --venv /work/venv-214 --venv .compat/py3.10-torch2.3.1
    python bench/compat.py --create 3.10=2.3.1 --create 3.13=2.14.1 --parts lab,proofs

`--create PYTHON=TORCH[,torchvision==V]` makes `.compat/pyPYTHON-torchTORCH` with that Python
(a path, or a version pyenv has) and `pip install torch==TORCH`, then this tree and the test
requirements. The table (Markdown) is printed at the end, with the commit it ran at; docs/compat.md
keeps the latest one.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: part -> pytest arguments (paths, then options)
PARTS: dict[str, list[str]] = {
    "lab": ["tests/run/test_lab.py", "tests/trace/test_lab.py", "tests/lint/test_lab.py", "tests/health/test_lab.py"],
    "proofs": ["tests/rules/test_docs.py"],
    "run": ["tests/run", "tests/observe", "--ignore=tests/run/test_lab.py", "--ignore=tests/observe/test_compiled.py"],
    "trace": ["tests/trace", "--ignore=tests/trace/test_lab.py"],
    "compile": ["tests/observe/test_compiled.py"],
}
#: what the tests need beside torch and this tree's own requirements
TEST_REQUIREMENTS = ["pytest>=8", "pytest-xdist>=3", "pyyaml>=6", "jsonschema>=4"]
COUNTS = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)")


def commit() -> str:
    """The tree's commit, with `+changes` when files differ from it."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return f"{head}+changes" if dirty else head or "?"


def python_of(version_or_path: str) -> str:
    """A Python interpreter: a path as given, or the newest pyenv version that starts with it."""
    if os.sep in version_or_path:
        return version_or_path
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = sorted(glob.glob(str(pyenv / "versions" / f"{version_or_path}*" / "bin" / "python")),
                   key=lambda p: [int(n) for n in re.findall(r"\d+", Path(p).parents[1].name)])
    if not found:
        raise SystemExit(f"no Python {version_or_path} under {pyenv}/versions (give a path to its interpreter)")
    return found[-1]


def create(spec: str, log: Path) -> Path:
    """Make (or reuse) the environment `PYTHON=TORCH[,EXTRA...]` and return its folder."""
    python, _, pins = spec.partition("=")
    torch, *extra = pins.split(",")
    venv = ROOT / ".compat" / f"py{python.rsplit(os.sep, 1)[-1]}-torch{torch}"
    pip = venv / "bin" / "pip"
    if not (venv / "bin" / "python").exists():
        subprocess.run([python_of(python), "-m", "venv", str(venv)], check=True)
    with log.open("a", encoding="utf-8") as out:
        def install(*args: str) -> None:
            subprocess.run([str(pip), "install", *args], check=True, stdout=out, stderr=subprocess.STDOUT)

        install("-q", "--upgrade", "pip")
        # torch first and alone: a bare `torch` requirement would take whatever the index has
        install(f"torch=={torch}", *extra)
        # torch before 2.4 was built against NumPy 1
        numpy = "numpy<2" if tuple(int(n) for n in re.findall(r"\d+", torch)[:2]) < (2, 4) else "numpy>=1.24"
        install("-e", str(ROOT), numpy, *TEST_REQUIREMENTS)
    return venv


def versions(venv: Path) -> dict[str, str]:
    code = ("import json, platform, torch\n"
            "try:\n    import torchvision; tv = torchvision.__version__\nexcept Exception: tv = None\n"
            "print(json.dumps({'torch': torch.__version__, 'python': platform.python_version(), 'torchvision': tv}))")
    done = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        return {"torch": f"does not import ({done.stderr.strip().splitlines()[-1:]})", "python": "?", "torchvision": ""}
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_part(venv: Path, part: str, workers: int, log: Path) -> dict[str, object]:
    """Run one part's tests in `venv`; its counts, seconds and exit status."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + str(ROOT),
           "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "VIRTUAL_ENV": str(venv)}
    env.pop("PYTEST_ADDOPTS", None)
    command = [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", *PARTS[part]]
    if workers > 1:
        command += ["-n", str(workers)]
    with log.open("a", encoding="utf-8") as out:
        out.write(f"\n===== {venv} {part}: {' '.join(command[1:])}\n")
        out.flush()
        begin = out.tell()
        start = time.monotonic()
        # pytest writes to the log as it goes (follow it with tail -f)
        done = subprocess.run(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        seconds = time.monotonic() - start
    with log.open("r", encoding="utf-8") as written:
        written.seek(begin)
        output = written.read()
    with log.open("a", encoding="utf-8") as out:
        out.write(f"===== {venv} {part}: exit {done.returncode}, {seconds:.0f} s\n")
    last = [line for line in output.splitlines() if COUNTS.search(line)]
    counts = {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
              for n, kind in COUNTS.findall(last[-1])} if last else {}
    return {"status": done.returncode, "seconds": round(seconds), **counts}


def cell(result: dict[str, object]) -> str:
    passed, failed, errors = (int(str(result.get(k, 0))) for k in ("passed", "failed", "error"))
    if result["status"] not in (0, 1) and not passed:
        return f"did not run (exit {result['status']})"
    words = f"{passed} passed"
    if failed or errors:
        words += f", **{failed + errors} failed**"
    return words


def table(rows: list[dict[str, object]], parts: list[str], at: str) -> str:
    head = ["torch", "Python", "torchvision", *parts]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        results = row["results"]
        assert isinstance(results, dict)
        cells = [str(row["torch"]), str(row["python"]), str(row["torchvision"] or "-")]
        cells += [cell(results[p]) if p in results else "-" for p in parts]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"At commit {at}.")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", action="append", default=[], type=Path, help="an environment with torch installed")
    parser.add_argument("--create", action="append", default=[], metavar="PYTHON=TORCH",
                        help="make (or reuse) an environment under .compat/ (e.g. 3.10=2.3.1)")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    parser.add_argument("--workers", type=int, default=1, help="pytest-xdist workers per part (1: none)")
    parser.add_argument("--log", type=Path, default=ROOT / ".compat" / "compat.log", help="pytest's output goes here")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()
    parts = [p for p in args.parts.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown part(s): {', '.join(unknown)}")
    args.log.parent.mkdir(parents=True, exist_ok=True)
    venvs = [v.resolve() for v in args.venv] + [create(spec, args.log) for spec in args.create]
    if not venvs:
        parser.error("give --venv or --create")
    at = commit()
    rows: list[dict[str, object]] = []
    failed = False
    for venv in venvs:
        row: dict[str, object] = {**versions(venv), "venv": str(venv), "results": {}}
        print(f"{venv}: torch {row['torch']}, Python {row['python']}", flush=True)
        results: dict[str, object] = {}
        if row["python"] != "?":
            for part in parts:
                results[part] = result = run_part(venv, part, args.workers, args.log)
                failed |= result["status"] != 0
                print(f"  {part}: {cell(result)} ({result['seconds']} s)", flush=True)
        else:
            failed = True
        row["results"] = results
        rows.append(row)
    print()
    print(table(rows, parts, at))
    if args.json:
        args.json.write_text(json.dumps({"commit": at, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
