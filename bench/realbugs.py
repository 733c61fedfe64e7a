"""Real-world recall: bug-fix commits from public PyTorch projects, and what `torchdoctor lint` says
about the file before and after each fix.

The corpus is bench/realbugs/cases/<owner>__<name>.json (one file per repository; the format is
bench/realbugs/FORMAT.md). A case names a repository, the fixing commit, its parent, the file, the
lines the fix changed on both sides, the kind of bug and whether a static (`lint`) or runtime
(`run`) tool could reach it. No fetched code is kept in this repository: each case's two files
are rebuilt from a bare git mirror of its repository:

    # 1. mirror each repository named in the case files (any way you like; in this project's
    #    sessions the `fetch` tool leaves them at /work/.mirror/<owner>+<name>/repo):
    git clone --mirror https://github.com/facebookresearch/detr /work/.mirror/facebookresearch+detr/repo
    # 2. rebuild, lint and score:
    python bench/realbugs.py [--mirrors /work/.mirror] [--half dev|test|both] [--json | --markdown] [--split]

The repository decides the half: `half(repo)` hashes its lower-cased name (sha256, first byte
even: development, odd: test), so a repository's cases never straddle the halves and the split
does not move when cases are added. Rules are tuned on the development half only; the test
half's figures are reported blind (docs/realbugs.md).

For every case, the file at `buggy` and the file at `fixed` are written to a temporary folder
under their own name and linted (one `torchdoctor lint --format json` call per half, every
rule, this checkout's lint). A case is

- **detected** when the buggy file has a finding of a rule that the fixed file has fewer of
  (findings compared as a multiset of rule codes; TD000, "not valid Python", never counts);
- **located** when, besides, one such finding is within 2 lines of `buggy_lines`;
- **silent-after** when the fixed file has no finding within 2 lines of `fixed_lines`
  (`new-after` counts the cases where a finding there is of a rule the buggy file has fewer of:
  a finding the fix itself brought).

Figures are given over the cases judged in reach (`reach` lint or run) and over all rebuilt
cases. Cases whose mirror is absent are counted as "not rebuilt" and listed.

A runnable case (`runnable: true`) names a driver, bench/realbugs/drivers/<file>.py: a short
program of ours that completes the repository's code with synthetic data and exercises the code
the fix touched, as a user of that code would. The repository's whole tree at `buggy` and at
`fixed` is extracted from the mirror, the driver is put at its root, and `torchdoctor run` runs it
in each tree (`run_case`). Run findings count only in the repository's files (never in the
driver, which is ours) and TD001, the generic "the script stopped", never counts, nor TD579 (a
check of the code's own failed, with the values it read: no kind of bug named); a case is
detected when lint or run detects it, and located when either locates it.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "realbugs" / "cases"
DEFAULT_MIRRORS = Path("/work/.mirror")
WINDOW = 2
KINDS_OF_PROJECT = ("vision", "nlp", "rl", "gan", "diffusion", "speech", "graph", "recsys", "tutorial",
                    "research", "library", "other")
REACH = ("lint", "run", "none")
SHA = re.compile(r"^[0-9a-f]{40}$")
KIND = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
IGNORED_RULES = {"TD000"}
DRIVERS = HERE / "realbugs" / "drivers"
DRIVER_NAME = "realbugs_driver.py"  # the driver's name at the root of the extracted tree
#: TD001, the generic "the script stopped", is not an explanation; TD579 (a check of the code's own
#: failed) adds the values its test read, but names no kind of bug: neither counts
IGNORED_RUN_RULES = {"TD000", "TD001", "TD579"}
RUN_TIMEOUT = 600


class CaseError(ValueError):
    """A case file that does not follow bench/realbugs/FORMAT.md: names the file and the field."""


@dataclass(frozen=True)
class Case:
    repo: str
    kind_of_project: str
    fixed: str
    buggy: str
    path: str
    buggy_lines: tuple[int, ...]
    fixed_lines: tuple[int, ...]
    kind: str
    summary: str
    reach: str
    reach_why: str
    runnable: bool
    source: str  # the case file, for messages
    index: int  # its place in that file
    driver: str = ""  # runnable cases: the driver's file name in bench/realbugs/drivers
    needs: tuple[str, ...] = ()  # modules the driver needs besides torch (imported names)

    @property
    def half(self) -> str:
        return half(self.repo)

    @property
    def ident(self) -> str:
        return f"{self.repo}@{self.fixed[:10]}:{self.path}"


def half(repo: str) -> str:
    """'dev' or 'test': a fixed function of the repository's name, the same on every machine."""
    return "dev" if hashlib.sha256(repo.lower().encode()).digest()[0] % 2 == 0 else "test"


def _need(record: dict, key: str, kind: type | tuple[type, ...], where: str) -> object:
    if key not in record:
        raise CaseError(f"{where}: missing field {key!r}")
    value = record[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise CaseError(f"{where}: field {key!r} must be {name}, not {type(value).__name__}")
    return value


def _lines(record: dict, key: str, where: str, allow_empty: bool) -> tuple[int, ...]:
    value = _need(record, key, list, where)
    assert isinstance(value, list)
    if not value and not allow_empty:
        raise CaseError(f"{where}: field {key!r} is empty")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value):
        raise CaseError(f"{where}: field {key!r} must be a list of line numbers (integers from 1)")
    return tuple(value)


def load_file(path: Path) -> list[Case]:
    """The cases of one case file; CaseError names the file, the case and the field at fault."""
    try:
        data = json.loads(path.read_text())
    except ValueError as error:
        raise CaseError(f"{path.name}: not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise CaseError(f"{path.name}: the top level must be an object")
    repo = _need(data, "repo", str, path.name)
    assert isinstance(repo, str)
    if not REPO.match(repo):
        raise CaseError(f"{path.name}: field 'repo' must be owner/name, not {repo!r}")
    if path.name != repo.replace("/", "__") + ".json":
        raise CaseError(f"{path.name}: field 'repo' is {repo!r}, so the file must be named "
                        f"{repo.replace('/', '__')}.json")
    kind_of_project = _need(data, "kind_of_project", str, path.name)
    if kind_of_project not in KINDS_OF_PROJECT:
        raise CaseError(f"{path.name}: field 'kind_of_project' must be one of {', '.join(KINDS_OF_PROJECT)}, "
                        f"not {kind_of_project!r}")
    records = _need(data, "cases", list, path.name)
    assert isinstance(records, list)
    cases = []
    seen = set()
    for i, record in enumerate(records):
        where = f"{path.name}: cases[{i}]"
        if not isinstance(record, dict):
            raise CaseError(f"{where}: must be an object")
        fixed, buggy = _need(record, "fixed", str, where), _need(record, "buggy", str, where)
        for side, sha in (("fixed", fixed), ("buggy", buggy)):
            if not SHA.match(str(sha)):
                raise CaseError(f"{where}: field {side!r} must be a 40-hex commit, not {sha!r}")
        if fixed == buggy:
            raise CaseError(f"{where}: 'fixed' and 'buggy' are the same commit")
        file = _need(record, "path", str, where)
        assert isinstance(file, str)
        if not file.endswith(".py") or file.startswith("/") or ".." in file.split("/"):
            raise CaseError(f"{where}: field 'path' must be a relative path to a .py file, not {file!r}")
        kind = _need(record, "kind", str, where)
        if not KIND.match(str(kind)):
            raise CaseError(f"{where}: field 'kind' must be kebab-case, not {kind!r}")
        reach = _need(record, "reach", str, where)
        if reach not in REACH:
            raise CaseError(f"{where}: field 'reach' must be one of {', '.join(REACH)}, not {reach!r}")
        summary = _need(record, "summary", str, where)
        reach_why = _need(record, "reach_why", str, where)
        for key, text in (("summary", summary), ("reach_why", reach_why)):
            if not str(text).strip():
                raise CaseError(f"{where}: field {key!r} is empty")
        runnable = _need(record, "runnable", bool, where)
        driver, needs = _driver(record, bool(runnable), where)
        if (fixed, file) in seen:
            raise CaseError(f"{where}: the case {str(fixed)[:10]} {file} is listed twice")
        seen.add((fixed, file))
        cases.append(Case(repo, str(kind_of_project), str(fixed), str(buggy), file,
                          _lines(record, "buggy_lines", where, allow_empty=False),
                          _lines(record, "fixed_lines", where, allow_empty=False),
                          str(kind), str(summary), str(reach), str(reach_why), bool(runnable), path.name, i,
                          driver, needs))
    return cases


def _driver(record: dict, runnable: bool, where: str) -> tuple[str, tuple[str, ...]]:
    """A runnable case's driver (a file of bench/realbugs/drivers) and the modules it needs."""
    if not runnable:
        if "driver" in record:
            raise CaseError(f"{where}: field 'driver' given, but 'runnable' is false")
        return "", ()
    driver = _need(record, "driver", str, where)
    assert isinstance(driver, str)
    if "/" in driver or not driver.endswith(".py") or not (DRIVERS / driver).is_file():
        raise CaseError(f"{where}: field 'driver' must name a file of bench/realbugs/drivers, not {driver!r}")
    needs = record.get("needs", [])
    if not isinstance(needs, list) or not all(isinstance(n, str) and n.isidentifier() for n in needs):
        raise CaseError(f"{where}: field 'needs' must be a list of module names")
    return driver, tuple(needs)


def load_cases(folder: Path = CASES) -> list[Case]:
    """Every case of every case file in `folder`, in file order."""
    cases: list[Case] = []
    for path in sorted(folder.glob("*.json")):
        cases.extend(load_file(path))
    return cases


def split(cases: list[Case]) -> dict[str, list[str]]:
    """The repositories of each half."""
    halves: dict[str, list[str]] = {"dev": [], "test": []}
    for repo in sorted({c.repo for c in cases}, key=str.lower):
        halves[half(repo)].append(repo)
    return halves


# --- rebuilding ---------------------------------------------------------------------------------------

def git_dir(mirrors: Path, repo: str) -> Path | None:
    """The git directory of `repo` under `mirrors`: <owner>+<name>/repo (bare, or a clone's repo/.git),
    or <owner>+<name> itself."""
    base = mirrors / repo.replace("/", "+")
    for candidate in (base / "repo", base / "repo" / ".git", base, base / ".git"):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def show(git: Path, sha: str, path: str) -> bytes | None:
    done = subprocess.run(["git", f"--git-dir={git}", "show", f"{sha}:{path}"], capture_output=True)
    return done.stdout if done.returncode == 0 else None


@dataclass
class Result:
    case: Case
    rebuilt: bool = False
    why_not: str = ""
    buggy_file: str = ""
    fixed_file: str = ""
    buggy_findings: list[dict] = field(default_factory=list)
    fixed_findings: list[dict] = field(default_factory=list)
    detected: bool = False
    located: bool = False
    silent_after: bool = True
    new_after: bool = False
    new_rules: list[str] = field(default_factory=list)
    run: dict | None = None  # run_case's verdict, once runnable cases are scored

    @property
    def in_reach(self) -> bool:
        return self.case.reach in ("lint", "run")


def rebuild(results: list[Result], mirrors: Path, root: Path) -> None:
    """Write each case's two files under root/<n>/buggy/<name> and root/<n>/fixed/<name>."""
    for n, result in enumerate(results):
        case = result.case
        git = git_dir(mirrors, case.repo)
        if git is None:
            result.why_not = f"no mirror at {mirrors / case.repo.replace('/', '+')}"
            continue
        name = Path(case.path).name
        blobs = {side: show(git, getattr(case, side), case.path) for side in ("buggy", "fixed")}
        missing = [side for side, blob in blobs.items() if blob is None]
        if missing:
            result.why_not = f"{' and '.join(missing)} file not in the mirror"
            continue
        for side, blob in blobs.items():
            target = root / str(n) / side / name
            target.parent.mkdir(parents=True)
            assert blob is not None
            target.write_bytes(blob)
            setattr(result, f"{side}_file", str(target))
        result.rebuilt = True


def lint(files: list[str]) -> dict[str, list[dict]]:
    """Findings per file, from one `torchdoctor lint --format json` call over all of `files`."""
    by_file: dict[str, list[dict]] = {f: [] for f in files}
    if not files:
        return by_file
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "lint.json"
        done = subprocess.run([sys.executable, "-m", "torchdoctor", "lint", "--fail-on", "never",
                               "--no-respect-gitignore", "--format", "json", "--output", str(out), *files],
                              capture_output=True, text=True)
        if not out.exists():
            raise RuntimeError(f"torchdoctor lint wrote no report (exit {done.returncode}): {done.stderr[-2000:]}")
        report = json.loads(out.read_text())
    for finding in report.get("findings", []):
        file = str(Path(finding.get("file") or "").resolve())
        if file in by_file and finding.get("rule") not in IGNORED_RULES:
            by_file[file].append({k: finding.get(k) for k in ("rule", "severity", "line", "message")})
    return by_file


def near(line: int | None, lines: tuple[int, ...]) -> bool:
    return line is not None and any(abs(line - target) <= WINDOW for target in lines)


def score(result: Result) -> None:
    case = result.case
    buggy = collections.Counter(f["rule"] for f in result.buggy_findings)
    fixed = collections.Counter(f["rule"] for f in result.fixed_findings)
    new = buggy - fixed  # rules the buggy file has more of
    gone = fixed - buggy  # rules the fixed file has more of
    result.new_rules = sorted(new)
    result.detected = bool(new)
    result.located = any(f["rule"] in new and near(f["line"], case.buggy_lines) for f in result.buggy_findings)
    at_fix = [f for f in result.fixed_findings if near(f["line"], case.fixed_lines)]
    result.silent_after = not at_fix
    result.new_after = any(f["rule"] in gone for f in at_fix)


def extract(git: Path, sha: str, into: Path) -> bool:
    """The repository's tree at `sha`, written under `into` (`git archive`). Some mirrors lack the
    blobs of large files (in the mirrors here: weights, media, notebooks); then the tree is extracted
    without the files that are missing."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", f"--git-dir={git}", "archive", "--format=tar", sha], capture_output=True)
    if archive.returncode != 0:
        listed = subprocess.run(["git", f"--git-dir={git}", "ls-tree", "-r", "--format=%(objectname) %(path)", sha],
                                capture_output=True, text=True)
        if listed.returncode != 0:
            return False
        present = subprocess.run(["git", f"--git-dir={git}", "cat-file", "--batch-check=%(objectname) %(objecttype)"],
                                 input="\n".join(line.split(" ", 1)[0] for line in listed.stdout.splitlines()),
                                 capture_output=True, text=True).stdout.split("\n")
        paths = [line.split(" ", 1)[1] for line, seen in zip(listed.stdout.splitlines(), present)
                 if seen.endswith(" blob")]
        archive = subprocess.run(["git", f"--git-dir={git}", "archive", "--format=tar", sha, "--",
                                  *(f":(literal){path}" for path in paths)], capture_output=True)
        if archive.returncode != 0:
            return False
    return subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout).returncode == 0


def run_side(tree: Path, driver: Path) -> dict:
    """`torchdoctor run` of the driver at the root of `tree`: its exit status and its findings in
    the repository's files (the driver's own lines are ours, and never count)."""
    shutil.copy(driver, tree / DRIVER_NAME)
    report = tree.parent / f"{tree.name}-run.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(tree), os.environ.get("PYTHONPATH"))))}
    try:
        done = subprocess.run([sys.executable, "-m", "torchdoctor", "run", "--fail-on", "never", "--format", "json",
                               "--output", str(report), DRIVER_NAME], cwd=tree, env=env, capture_output=True,
                              text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"exit": None, "findings": [], "error": f"timed out after {RUN_TIMEOUT} s"}
    if not report.exists():
        return {"exit": done.returncode, "findings": [], "error": done.stderr[-2000:]}
    findings = []
    for finding in json.loads(report.read_text()).get("findings", []):
        file = finding.get("file")
        if not file:
            continue
        path = (tree / file).resolve()
        if path.is_relative_to(tree.resolve()) and path.name != DRIVER_NAME:
            findings.append({"rule": finding.get("rule"), "severity": finding.get("severity"),
                             "file": str(path.relative_to(tree.resolve())), "line": finding.get("line"),
                             "message": finding.get("message")})
    return {"exit": done.returncode, "findings": findings, "tail": done.stderr[-1500:]}


def run_case(result: Result, mirrors: Path, root: Path) -> dict:
    """Score a runnable case with `torchdoctor run`: its driver, in the buggy and the fixed tree."""
    case = result.case
    missing = [m for m in case.needs if importlib.util.find_spec(m) is None]
    if missing:
        return {"skipped": f"the driver needs {', '.join(missing)} (pip install it)"}
    git = git_dir(mirrors, case.repo)
    assert git is not None  # the case was rebuilt
    sides = {}
    for side in ("buggy", "fixed"):
        tree = root / f"{case.source}-{case.index}" / side
        if not extract(git, getattr(case, side), tree):
            return {"skipped": f"could not extract the {side} tree"}
        sides[side] = run_side(tree, DRIVERS / case.driver)
    counted = {side: [f for f in out["findings"] if f["rule"] not in IGNORED_RUN_RULES] for side, out in sides.items()}
    new = collections.Counter(f["rule"] for f in counted["buggy"]) - collections.Counter(
        f["rule"] for f in counted["fixed"])
    located = any(f["rule"] in new and f["file"] == case.path and near(f["line"], case.buggy_lines)
                  for f in counted["buggy"])
    return {"buggy": sides["buggy"], "fixed": sides["fixed"], "new_rules": sorted(new),
            "detected": bool(new), "located": located}


def evaluate(cases: list[Case], mirrors: Path, run: bool = True) -> list[Result]:
    """Rebuild, lint and score every case; with `run`, also run the runnable ones."""
    results = [Result(case) for case in cases]
    with tempfile.TemporaryDirectory(prefix="realbugs-") as tmp:
        root = Path(tmp)
        rebuild(results, mirrors, root)
        for which in ("dev", "test"):
            mine = [r for r in results if r.rebuilt and r.case.half == which]
            files = [str(Path(p).resolve()) for r in mine for p in (r.buggy_file, r.fixed_file)]
            found = lint(files)
            for r in mine:
                r.buggy_findings = found[str(Path(r.buggy_file).resolve())]
                r.fixed_findings = found[str(Path(r.fixed_file).resolve())]
                score(r)
                if run and r.case.runnable:
                    r.run = run_case(r, mirrors, root)
                    if r.run.get("detected"):
                        r.detected = True
                        r.located = r.located or r.run["located"]
                        r.new_rules = sorted({*r.new_rules, *(f"run:{rule}" for rule in r.run["new_rules"])})
    return results


# --- reporting ----------------------------------------------------------------------------------------

def pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "0/0"


def summary(results: list[Result]) -> dict[str, int]:
    rebuilt = [r for r in results if r.rebuilt]
    reach = [r for r in rebuilt if r.in_reach]
    return {
        "cases": len(results),
        "repositories": len({r.case.repo for r in results}),
        "rebuilt": len(rebuilt),
        "not_rebuilt": len(results) - len(rebuilt),
        "in_reach": len(reach),
        "in_reach_lint": sum(r.case.reach == "lint" for r in rebuilt),
        "in_reach_run": sum(r.case.reach == "run" for r in rebuilt),
        "detected": sum(r.detected for r in reach),
        "located": sum(r.located for r in reach),
        "detected_all": sum(r.detected for r in rebuilt),
        "located_all": sum(r.located for r in rebuilt),
        "silent_after": sum(r.silent_after for r in rebuilt),
        "new_after": sum(r.new_after for r in rebuilt),
        "runnable": sum(r.case.runnable for r in results),
        "run_scored": sum(r.run is not None and "skipped" not in r.run for r in results),
        "run_detected": sum(bool(r.run and r.run.get("detected")) for r in results),
        "run_located": sum(bool(r.run and r.run.get("located")) for r in results),
    }


def by_kind(results: list[Result]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for r in results:
        if not r.rebuilt:
            continue
        row = table.setdefault(r.case.kind, {"cases": 0, "in_reach": 0, "detected": 0, "located": 0})
        row["cases"] += 1
        row["in_reach"] += r.in_reach
        row["detected"] += r.in_reach and r.detected
        row["located"] += r.in_reach and r.located
    return dict(sorted(table.items(), key=lambda kv: (-kv[1]["cases"], kv[0])))


def print_half(name: str, results: list[Result]) -> None:
    s = summary(results)
    print(f"\n== {name} half: {s['cases']} cases from {s['repositories']} repositories ==")
    if s["not_rebuilt"]:
        print(f"not rebuilt: {s['not_rebuilt']} (their mirror or file is absent)")
        for r in results:
            if not r.rebuilt:
                print(f"  {r.case.ident}: {r.why_not}")
    rebuilt, reach = s["rebuilt"], s["in_reach"]
    print(f"rebuilt {rebuilt}; in reach {reach} (lint {s['in_reach_lint']}, run {s['in_reach_run']})")
    print(f"in reach:  detected {pct(s['detected'], reach)}, located {pct(s['located'], reach)}")
    print(f"all cases: detected {pct(s['detected_all'], rebuilt)}, located {pct(s['located_all'], rebuilt)}")
    print(f"silent-after {pct(s['silent_after'], rebuilt)}; "
          f"a finding the fix brought at its lines (new-after): {s['new_after']}")
    if s["runnable"]:
        print(f"runnable: {s['runnable']}, run {s['run_scored']}: run detected {s['run_detected']}, "
              f"located {s['run_located']}")
        for r in results:
            if r.run is not None:
                print_run(r)
    print(f"{'kind':32} {'cases':>5} {'reach':>5} {'det':>4} {'loc':>4}")
    for kind, row in by_kind(results).items():
        print(f"{kind:32} {row['cases']:>5} {row['in_reach']:>5} {row['detected']:>4} {row['located']:>4}")
    detected = [r for r in results if r.rebuilt and r.detected]
    if detected:
        print("detected:")
        for r in detected:
            where = "located" if r.located else "elsewhere"
            print(f"  {r.case.ident} [{r.case.kind}, reach {r.case.reach}]: {', '.join(r.new_rules)} ({where})")
    noisy = [r for r in results if r.rebuilt and not r.silent_after]
    if noisy:
        print("findings at the fixed lines of the fixed file:")
        for r in noisy:
            rules = sorted({f["rule"] for f in r.fixed_findings if near(f["line"], r.case.fixed_lines)})
            print(f"  {r.case.ident}: {', '.join(rules)}{' (new)' if r.new_after else ''}")


def print_run(result: Result) -> None:
    """What `run` said of one runnable case, side by side: enough to write and check its driver."""
    run = result.run
    assert run is not None
    if "skipped" in run:
        print(f"  run {result.case.ident}: skipped: {run['skipped']}")
        return
    verdict = "located" if run["located"] else "detected" if run["detected"] else "missed"
    print(f"  run {result.case.ident} [{result.case.kind}]: {verdict} {', '.join(run['new_rules'])}")
    for side in ("buggy", "fixed"):
        out = run[side]
        found = "; ".join(f"{f['rule']} {f['file']}:{f['line']}" for f in out["findings"]) or "no finding"
        print(f"    {side}: exit {out['exit']}: {found}{' (' + out['error'][-300:] + ')' if out.get('error') else ''}")


def markdown(results: list[Result], chosen: tuple[str, ...]) -> str:
    """The tables of docs/realbugs.md: figures per half, the development half's kinds, the cases out of reach."""
    out = ["| half | repositories | cases | rebuilt | in reach (lint / run) | detected | located | "
           "detected, all cases | silent-after | new-after |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for which in chosen:
        s = summary([r for r in results if r.case.half == which])
        out.append(f"| {which} | {s['repositories']} | {s['cases']} | {s['rebuilt']} | {s['in_reach']} "
                   f"({s['in_reach_lint']} / {s['in_reach_run']}) | {pct(s['detected'], s['in_reach'])} | "
                   f"{pct(s['located'], s['in_reach'])} | {pct(s['detected_all'], s['rebuilt'])} | "
                   f"{pct(s['silent_after'], s['rebuilt'])} | {s['new_after']} |")
    if "dev" in chosen:
        out += ["", "| kind (development half) | cases | in reach | detected | located |", "|---|---:|---:|---:|---:|"]
        for kind, row in by_kind([r for r in results if r.case.half == "dev"]).items():
            out.append(f"| {kind} | {row['cases']} | {row['in_reach']} | {row['detected']} | {row['located']} |")
    out += ["", "| repository | fixing commit | file | kind | why no tool can see it |", "|---|---|---|---|---|"]
    for r in sorted(results, key=lambda r: (r.case.repo.lower(), r.case.kind)):
        if r.case.reach == "none":
            c = r.case
            out.append(f"| {c.repo} | {c.fixed[:10]} | {c.path} | {c.kind} | "
                       f"{c.reach_why.removeprefix('none: ').replace('|', '/')} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mirrors", type=Path, default=DEFAULT_MIRRORS,
                        help="folder of bare mirrors, <owner>+<name>/repo (default: %(default)s)")
    parser.add_argument("--cases", type=Path, default=CASES, help="folder of case files (default: %(default)s)")
    parser.add_argument("--half", choices=("dev", "test", "both"), default="both")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--split", action="store_true", help="only print which repository is in which half")
    parser.add_argument("--markdown", action="store_true", help="print the tables of docs/realbugs.md")
    parser.add_argument("--no-run", action="store_true", help="score with lint only (runnable cases not run)")
    parser.add_argument("--only", metavar="TEXT", help="only the cases whose commit starts with TEXT or whose "
                        "repository or path contains it (to write and check a driver)")
    args = parser.parse_args(argv)
    try:
        cases = load_cases(args.cases)
    except CaseError as error:
        print(f"realbugs: {error}", file=sys.stderr)
        return 2
    halves = split(cases)
    if not (args.json or args.markdown):
        for which in ("dev", "test"):
            counts = collections.Counter(c.repo for c in cases if c.half == which)
            listed = ", ".join(f"{repo} ({counts[repo]})" for repo in halves[which])
            print(f"{which} half: {len(halves[which])} repositories, {sum(counts.values())} cases: {listed}")
    if args.split:
        if args.json:
            print(json.dumps(halves, indent=2))
        return 0
    chosen = ("dev", "test") if args.half == "both" else (args.half,)
    picked = [c for c in cases if c.half in chosen and (
        not args.only or c.fixed.startswith(args.only) or args.only in c.repo or args.only in c.path)]
    results = evaluate(picked, args.mirrors, run=not args.no_run)
    if args.markdown:
        print(markdown(results, chosen))
        return 0
    if args.json:
        out = {
            "split": halves,
            "halves": {h: {"summary": summary([r for r in results if r.case.half == h]),
                           "by_kind": by_kind([r for r in results if r.case.half == h])} for h in chosen},
            "cases": [{**{k: v for k, v in asdict(r).items() if k not in ("case", "buggy_file", "fixed_file")},
                       "case": r.case.ident, "half": r.case.half, "kind": r.case.kind, "reach": r.case.reach}
                      for r in results],
        }
        print(json.dumps(out, indent=2))
        return 0
    for which in chosen:
        print_half(which, [r for r in results if r.case.half == which])
    return 0


if __name__ == "__main__":
    sys.exit(main())
