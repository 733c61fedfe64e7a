"""Detection depth: put one known bug at a time into real training programs written elsewhere,
and score what `torchdoctor lint` and `torchdoctor run` say about each.

The corpus is correct programs from pytorch/examples, yunjey/pytorch-tutorial, karpathy/nanoGPT
and karpathy/minGPT (bench/mutation/programs.py names each snapshot, folder and script). No
fetched code is kept in this repository: the corpus is a folder outside it (`--corpus`,
default /work/mutation/corpus), built from bare git mirrors of those repositories:

    # 1. mirror each repository (any way you like; in this project's sessions the `fetch` tool
    #    leaves them at /work/.mirror/<owner>+<name>/repo):
    git clone --mirror https://github.com/pytorch/examples /work/.mirror/pytorch+examples/repo
    ...  (yunjey/pytorch-tutorial, karpathy/nanoGPT, karpathy/minGPT)
    # 2. extract the programs and write their synthetic data files:
    python bench/mutation_bench.py --build-corpus [--mirrors /work/.mirror] [--corpus DIR]

The programs run unedited on small synthetic data: bench/mutation/stubs/ goes first on
PYTHONPATH, with stand-ins for torchvision (its data sets become learnable synthetic images of
the real shapes, sizes set by TD_MUTATION_TRAIN_SIZE / TD_MUTATION_TEST_SIZE; where the real
torchvision imports beside the installed torch, as 0.29.1 does beside torch 2.14.1, its
transforms, models and utils are used and only the data sets are synthetic; PyPI's wheel does
not import beside the 2.13.0 CPU build, where the stand-in gives those too) and gymnasium
(CartPole in plain Python);
text corpora and token files are generated; arguments shrink epochs and models.

Then, for every program, every file it lists to mutate and every operator of
bench/mutation/operators.py, the first place the operator applies is mutated (one bug per
mutant), and the mutant is linted and run (`OMP_NUM_THREADS=1`, `--jobs` at a time, each run
bounded by the program's own shrunk length and `--timeout`). A mutant is

- **detected** when a finding at `warning` or `error`, of one of the categories the operator
  names, is new (not in the unmutated program's report at the same rule and line);
- **located** when such a finding is in the mutated file within one line of a changed line.

The unmutated programs and the lab's fixed twins (examples/lab/fixed/) measure false alarms:
their `error`s and `warning`s are counted per program.

    python bench/mutation_bench.py [--jobs 2] [--programs nanoGPT,mnist] [--operators drop_step]
                                   [--per-operator 2 --seed 0] [--run-all]
                                   [--save results.json] [--load results.json] [--no-lab]

A mutant that lint already locates is not run (`--run-all` runs it anyway): the run could change
neither of its scores. `--per-operator K` measures a stratified sample (at most K mutants of each
operator, drawn with `--seed`) when the whole catalogue does not fit in the time at hand; the
table then also prints the totals weighted by each operator's share of all mutants.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import contextlib
import functools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from mutation.operators import OPERATORS, Mutation, mutants  # noqa: E402
from mutation.programs import KEEP, PROGRAMS, Program  # noqa: E402

STUBS = HERE / "mutation" / "stubs"
LAB_FIXED = REPO / "examples" / "lab" / "fixed"
SERIOUS = {"error", "warning"}
LINT_ONLY = False


# --- the corpus --------------------------------------------------------------------------------

def mirror_of(mirrors: Path, repo: str) -> Path:
    return mirrors / repo.replace("/", "+") / "repo"


def build_corpus(corpus: Path, mirrors: Path) -> None:
    for program in PROGRAMS:
        git_dir = mirror_of(mirrors, program.source[0])
        dest = corpus / program.name
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        paths = KEEP.get(program.source, (program.folder,)) if not program.folder else (program.folder,)
        git = ["git", "--git-dir", str(git_dir)]
        names = subprocess.run([*git, "ls-tree", "-r", "--name-only", program.source[1], "--", *paths],
                               capture_output=True, text=True, check=True).stdout.split()
        for name in names:
            if not name.endswith(".py"):      # data files are made by the program's `setup`
                continue
            blob = subprocess.run([*git, "show", f"{program.source[1]}:{name}"], capture_output=True)
            if blob.returncode:
                continue
            relative = Path(name).relative_to(program.folder) if program.folder else Path(name)
            (dest / relative).parent.mkdir(parents=True, exist_ok=True)
            (dest / relative).write_bytes(blob.stdout)
        if program.setup:
            program.setup(dest)
        print(f"{program.name}: {sum(1 for _ in dest.rglob('*.py'))} .py files")


# --- one lint and one run ----------------------------------------------------------------------

@dataclass
class Finding:
    tool: str
    rule: str
    category: str
    severity: str
    file: str
    line: int
    message: str


@functools.cache
def real_torchvision() -> str | None:
    """The version of the real torchvision where it imports beside this torch (torch 2.14.1 with
    torchvision 0.29.1 does; PyPI's beside the 2.13.0 CPU build does not), else None."""
    done = subprocess.run([sys.executable, "-c", "import torchvision; print(torchvision.__version__)"],
                          capture_output=True, text=True)
    version = done.stdout.strip() if done.returncode == 0 else ""
    return version or None


def environment(program: Program, root: Path | None = None) -> dict:
    env = dict(os.environ)
    own = [str(root / p) for p in program.paths] if root else []
    env.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0",
                "PYTHONPATH": os.pathsep.join(filter(None, [str(STUBS), *own, env.get("PYTHONPATH")])),
                "PYTHONDONTWRITEBYTECODE": "1"})
    if real_torchvision():  # its transforms, models and utils run; only the data sets are synthetic
        env["TD_MUTATION_REAL_TORCHVISION"] = "1"
    env.update(program.env)
    return env


def torchdoctor() -> list[str]:
    return [sys.executable, "-m", "torchdoctor"]


def read_report(path: Path, tool: str, root: Path, cwd: Path) -> list[Finding]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    found = []
    for f in data.get("findings", []):
        file = f.get("file") or ""
        if file:
            p = Path(file)
            p = p if p.is_absolute() else (cwd / p)
            try:
                file = str(p.resolve().relative_to(root.resolve()))
            except ValueError:
                file = str(p)
        found.append(Finding(tool, f["rule"], f["category"], f["severity"], file, f.get("line") or 0,
                             f.get("message", "")))
    return found


def lint(root: Path, program: Program) -> list[Finding]:
    out = root / ".td-lint.json"
    subprocess.run([*torchdoctor(), "lint", "--fail-on", "never", "--output", str(out), "--format", "json", "."],
                   cwd=root, env=environment(program), capture_output=True, timeout=300)
    return read_report(out, "lint", root, root)


def run(root: Path, program: Program, timeout: float) -> tuple[list[Finding], float, bool]:
    entry = root / program.entry
    out = root / ".td-run.json"
    start = time.monotonic()
    timed_out = False
    process = subprocess.Popen([*torchdoctor(), "run", "--fail-on", "never", "--output", str(out), "--format",
                                "json", entry.name, *program.args], cwd=entry.parent, env=environment(program, root),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        # interrupted like a user's Ctrl-C (to the whole process group), the run still writes
        # what it found so far
        timed_out = True
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # what the program left running (its own group: start_new_session)
    return read_report(out, "run", root, entry.parent), time.monotonic() - start, timed_out


def examine(program: Program, corpus: Path, timeout: float, mutated: tuple[str, str] | None = None,
            enough: Callable[[list[Finding]], bool] | None = None) -> dict:
    """Lint and run the program (with `mutated` = (file, source) written over its file), in a copy.
    `enough(lint's findings)` true skips the run: it could change neither score."""
    with tempfile.TemporaryDirectory(prefix="td-mutant-") as tmp:
        root = Path(tmp) / "p"
        shutil.copytree(corpus / program.name, root, ignore=shutil.ignore_patterns("out", "__pycache__"))
        if mutated:
            (root / mutated[0]).write_text(mutated[1])
        findings = lint(root, program)
        seconds, timed_out, skipped = 0.0, False, False
        if program.run and not LINT_ONLY:
            skipped = enough is not None and enough(findings)
            if not skipped:
                ran, seconds, timed_out = run(root, program, timeout)
                findings += ran
    return {"findings": [asdict(f) for f in findings], "seconds": round(seconds, 1), "timed_out": timed_out,
            "run_skipped": skipped}


# --- scoring -----------------------------------------------------------------------------------

@dataclass
class Result:
    program: str
    operator: str
    file: str
    lines: list[int]
    before: str
    after: str
    inserted: int | None
    findings: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    timed_out: bool = False
    detected: bool = False
    located: bool = False
    by: list[str] = field(default_factory=list)


def key(f: dict, file: str | None = None, inserted: int | None = None) -> tuple:
    line = f["line"]
    if inserted is not None and f["file"] == file and line >= inserted:
        line -= 1          # a line was added above: compare with the baseline's numbering
    return (f["tool"], f["rule"], f["file"], line)


def score(result: Result, baseline: list[dict]) -> None:
    known = {key(f) for f in baseline}
    categories = OPERATORS[result.operator].categories
    for f in result.findings:
        if f["severity"] not in SERIOUS or f["category"] not in categories:
            continue
        if key(f, result.file, result.inserted) in known:
            continue
        result.detected = True
        near = f["file"] == result.file and any(abs(f["line"] - line) <= 1 for line in result.lines)
        result.located = result.located or near
        result.by.append(f"{f['tool']}:{f['rule']}{'@' if near else ''}")


# --- the bench ---------------------------------------------------------------------------------

def executed_lines(program: Program, corpus: Path, timeout: float) -> dict[str, set[int]] | None:
    """The lines of the program's files that its unmutated run executes (plain python under
    `coverage`, cached in the corpus): a mutation of a line that never runs is no bug."""
    root = corpus / program.name
    cache = root / ".executed.json"
    if cache.exists():
        return {k: set(v) for k, v in json.loads(cache.read_text()).items()}
    if not program.run:
        return None
    entry = root / program.entry
    data = root / ".coverage-data"
    report = root / ".coverage.json"
    env = environment(program, root)
    subprocess.run([sys.executable, "-m", "coverage", "run", f"--data-file={data}", f"--include={root}/*",
                    entry.name, *program.args], cwd=entry.parent, env=env, capture_output=True, timeout=timeout * 3)
    subprocess.run([sys.executable, "-m", "coverage", "json", f"--data-file={data}", "-o", str(report)],
                   cwd=root, env=env, capture_output=True)
    files = json.loads(report.read_text())["files"]
    executed = {str((root / k).resolve().relative_to(root.resolve())): set(v["executed_lines"])
                for k, v in files.items()}
    cache.write_text(json.dumps({k: sorted(v) for k, v in executed.items()}))
    for path in (data, report):
        path.unlink(missing_ok=True)
    return executed


def statement_starts(source: str) -> dict[int, int]:
    """Each line -> the first line of the innermost statement it belongs to (coverage counts those)."""
    starts = {}
    for node in sorted((n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.stmt)), key=lambda n: n.lineno):
        body = getattr(node, "body", None)
        last = body[0].lineno - 1 if isinstance(body, list) and body else node.end_lineno
        for line in range(node.lineno, max(node.lineno, last) + 1):
            starts[line] = node.lineno
    return starts


def runs(m: Mutation, executed: set[int] | None, starts: dict[int, int]) -> bool:
    if executed is None:
        return True
    if m.inserted is not None:       # an added line: the statement it now stands before must run
        return m.inserted in executed
    return any(starts.get(line, line) in executed for line in m.lines)


def plan(programs: list[Program], corpus: Path, operators: list[str], timeout: float = 150
         ) -> list[tuple[Program, str, Mutation]]:
    todo = []
    for program in programs:
        executed = executed_lines(program, corpus, timeout)
        texts = {f: (corpus / program.name / f).read_text() for f in program.targets}
        others = "\n".join(p.read_text() for p in (corpus / program.name).rglob("*.py"))
        for file, source in texts.items():
            lines = executed.get(file, set()) if executed is not None else None
            starts = statement_starts(source)
            for op in operators:
                first = next((m for m in mutants(source, op, others) if runs(m, lines, starts)), None)
                if first is not None:
                    todo.append((program, file, first))
    return todo


def measure(args) -> dict:
    corpus = Path(args.corpus)
    programs = [p for p in PROGRAMS if not args.programs or any(s in p.name for s in args.programs.split(","))]
    operators = [o for o in OPERATORS if not args.operators or o in args.operators.split(",")]
    todo = plan(programs, corpus, operators, args.timeout)
    print(f"{len(programs)} programs, {len(operators)} operators, {len(todo)} mutants", file=sys.stderr)
    population = dict(Counter(m.operator for _, _, m in todo))
    if args.per_operator:
        todo = stratified(todo, args.per_operator, args.seed)
        print(f"sample: at most {args.per_operator} per operator (seed {args.seed}), {len(todo)} mutants",
              file=sys.stderr)
    pool = concurrent.futures.ThreadPoolExecutor(args.jobs)
    baselines = {p.name: pool.submit(examine, p, corpus, args.timeout) for p in programs}

    def located_by_lint(program: Program, file: str, m: Mutation) -> Callable[[list[Finding]], bool]:
        def enough(found: list[Finding]) -> bool:
            probe = Result(program.name, m.operator, file, list(m.lines), "", "", m.inserted,
                           [asdict(f) for f in found])
            score(probe, baselines[program.name].result()["findings"])
            return probe.located
        return enough

    jobs = [(program, file, m, pool.submit(examine, program, corpus, args.timeout, (file, m.source),
                                           None if args.run_all else located_by_lint(program, file, m)))
            for program, file, m in todo]
    results = []
    for i, (program, file, m, job) in enumerate(jobs, 1):
        seen = job.result()
        result = Result(program.name, m.operator, file, list(m.lines), m.before, m.after, m.inserted,
                        seen["findings"], seen["seconds"], seen["timed_out"])
        score(result, baselines[program.name].result()["findings"])
        results.append(asdict(result))
        mark = "L" if result.located else ("D" if result.detected else "-")
        print(f"[{i}/{len(jobs)}] {mark} {program.name} {m.operator} {file}:{m.lines[0]} {result.by}",
              file=sys.stderr)
    lab = {}
    if args.lab and not LINT_ONLY:
        lab = {p.name: pool.submit(examine_lab, p, args.timeout) for p in sorted(LAB_FIXED.glob("*.py"))}
    return {"baselines": {name: job.result() for name, job in baselines.items()}, "population": population,
            "results": results, "lab": {name: job.result() for name, job in lab.items()}}


def stratified(todo: list[tuple[Program, str, Mutation]], per_operator: int, seed: int
               ) -> list[tuple[Program, str, Mutation]]:
    """At most `per_operator` mutants of each operator, drawn with a seeded generator, in plan order."""
    rng = random.Random(seed)
    by_operator: dict[str, list[int]] = defaultdict(list)
    for i, (_, _, m) in enumerate(todo):
        by_operator[m.operator].append(i)
    keep = {i for indices in by_operator.values() for i in rng.sample(indices, min(per_operator, len(indices)))}
    return [item for i, item in enumerate(todo) if i in keep]


def examine_lab(path: Path, timeout: float) -> dict:
    program = Program(path.name, ("", ""), "", path.name)
    with tempfile.TemporaryDirectory(prefix="td-lab-") as tmp:
        root = Path(tmp)
        shutil.copy(path, root / path.name)
        findings = lint(root, program)
        ran, seconds, timed_out = run(root, program, timeout)
    return {"findings": [asdict(f) for f in findings + ran], "seconds": round(seconds, 1), "timed_out": timed_out}


def false_alarms(reports: dict) -> tuple[int, int, int, list[str]]:
    errors = warned = 0
    lines = []
    for name, report in sorted(reports.items()):
        serious = [f for f in report["findings"] if f["severity"] in SERIOUS]
        errors += any(f["severity"] == "error" for f in serious)
        warned += any(f["severity"] == "warning" for f in serious)
        for f in serious:
            lines.append(f"  {name}: {f['tool']} {f['rule']} [{f['severity']}] {f['file']}:{f['line']} {f['message'][:110]}")
    return errors, warned, len(reports), lines


def table(data: dict) -> str:
    rows = defaultdict(lambda: [0, 0, 0])
    for r in data["results"]:
        row = rows[r["operator"]]
        row[0] += 1
        row[1] += r["detected"]
        row[2] += r["located"]
    out = ["| operator | categories | mutants | detected | located | the bug |", "| --- | --- | ---: | ---: | ---: | --- |"]
    for name, op in OPERATORS.items():
        n, d, loc = rows.get(name, [0, 0, 0])
        out.append(f"| `{name}` | {', '.join(sorted(op.categories))} | {n} | {d} | {loc} | {op.bug} |")
    total = [sum(r[i] for r in rows.values()) for i in range(3)]
    pct = (lambda a: f"{100 * a / total[0]:.0f}%") if total[0] else (lambda a: "-")
    out.append(f"| **total** | | **{total[0]}** | **{total[1]} ({pct(total[1])})** | **{total[2]} ({pct(total[2])})** | |")
    population = data.get("population") or {}
    if population and sum(population.values()) != total[0]:
        out.append("")
        out.append(f"a sample of {total[0]} of {sum(population.values())} mutants; weighted by each operator's share "
                   f"of all mutants: {weighted(rows, population, 1)} detected, {weighted(rows, population, 2)} located")
    for title, reports in (("unmutated programs", data["baselines"]), ("lab fixed twins", data.get("lab") or {})):
        if not reports:
            continue
        errors, warned, count, lines = false_alarms(reports)
        out.append("")
        out.append(f"{title}: {count} programs, {errors} with an error, {warned} with a warning "
                   f"({100 * warned / max(count, 1):.0f}%)")
        out.extend(lines)
    missed = [r for r in data["results"] if not r["detected"]]
    if missed:
        out.append("")
        out.append("missed:")
        for r in missed:
            got = sorted({f"{f['tool']}:{f['rule']}[{f['severity']}/{f['category']}]" for f in r["findings"]
                          if f["severity"] in SERIOUS})
            out.append(f"  {r['program']} {r['operator']} {r['file']}:{r['lines']} {'(timed out) ' if r['timed_out'] else ''}"
                       f"{r['before'][:50]!r} -> {r['after'][:60]!r} saw {got}")
    unlocated = [r for r in data["results"] if r["detected"] and not r["located"]]
    if unlocated:
        out.append("")
        out.append("detected, not located:")
        for r in unlocated:
            out.append(f"  {r['program']} {r['operator']} {r['file']}:{r['lines']} by {r['by']}")
    return "\n".join(out)


def weighted(rows: dict[str, list[int]], population: dict[str, int], column: int) -> str:
    """The sample's rate per operator, weighted by that operator's count among all mutants."""
    sampled = {op: n for op, n in population.items() if rows.get(op, [0])[0]}
    rate = sum(n * rows[op][column] / rows[op][0] for op, n in sampled.items()) / max(sum(sampled.values()), 1)
    return f"{100 * rate:.0f}%"


def main() -> None:
    # started in the background (`nohup ... &`), this process and everything it starts would
    # ignore SIGINT, and a timed-out program would never stop to write its report: a handler of
    # our own resets to the default in every program started from here
    signal.signal(signal.SIGINT, signal.default_int_handler)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="/work/mutation/corpus")
    parser.add_argument("--mirrors", default="/work/.mirror")
    parser.add_argument("--build-corpus", action="store_true", help="extract the programs from the mirrors and stop")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=150)
    parser.add_argument("--programs", default="", help="comma-separated parts of program names")
    parser.add_argument("--operators", default="", help="comma-separated operator names")
    parser.add_argument("--no-lab", dest="lab", action="store_false", help="skip the lab's fixed twins")
    parser.add_argument("--save", help="write the raw results here (JSON)")
    parser.add_argument("--load", help="print the table of saved results instead of measuring")
    parser.add_argument("--lint-only", action="store_true", help="only lint (a quick look at lint's share)")
    parser.add_argument("--per-operator", type=int, default=0,
                        help="measure a stratified sample: at most this many mutants of each operator")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    parser.add_argument("--run-all", action="store_true",
                        help="run every mutant, also those lint already locates (same scores, slower)")
    args = parser.parse_args()
    global LINT_ONLY
    LINT_ONLY = args.lint_only
    if args.build_corpus:
        build_corpus(Path(args.corpus), Path(args.mirrors))
        return
    if not args.load:
        real = real_torchvision()
        print(f"torchvision: the real {real}, with synthetic data sets" if real else
              "torchvision: the stand-in (bench/mutation/stubs/torchvision)", flush=True)
    data = json.loads(Path(args.load).read_text()) if args.load else measure(args)
    if args.save:
        Path(args.save).write_text(json.dumps(data, indent=1))
    print(table(data))


if __name__ == "__main__":
    main()
