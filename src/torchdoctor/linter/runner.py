"""Linting many files into one `Report`: discovery, reading, the engine, fixes, problems per file.

A file that cannot be linted (unreadable, undecodable, a syntax error, a rule that crashed)
becomes a TD00x finding for that file and the others are still linted; those rules are
"fatal", so the command exits with status 2 when one is reported (see `cli.finish`).
"""

from __future__ import annotations

import linecache
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from torchdoctor.core import registry
from torchdoctor.core.config import Config
from torchdoctor.core.errors import UsageError
from torchdoctor.core.finding import Finding
from torchdoctor.core.progress import Progress
from torchdoctor.core.report import ExitStatus, Report
from torchdoctor.core.suppress import is_suppressed
from torchdoctor.core.wording import counted
from torchdoctor.linter.engine import Engine, describe, fixable, parse
from torchdoctor.linter.files import Excluder, Patterns, Skipped, Target, discover
from torchdoctor.linter.fixes import unified_diff
from torchdoctor.linter.source import MAX_BYTES, Source, Unreadable, decode, read_bytes
from torchdoctor.linter.syntax import newer_syntax

SYNTAX_ERROR, UNDECODABLE, UNREADABLE, INTERNAL, NOT_LINTED = "TD000", "TD004", "TD003", "TD005", "TD007"
FATAL = (SYNTAX_ERROR, UNDECODABLE, UNREADABLE, INTERNAL)
#: deep enough for any hand-written code; the walk is recursive
RECURSION_LIMIT = 12000
#: seconds of linting before the progress line appears (most runs end before it)
PROGRESS_AFTER = 1.0


@dataclass
class Options:
    """How to lint, beyond which rules (that is the `Config`)."""

    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False
    respect_gitignore: bool = True
    exclude: Sequence[str] = ()
    max_bytes: int = MAX_BYTES
    stdin_text: str | None = None
    stdin_filename: str = "<stdin>"
    #: a progress line on a terminal when linting takes a while (None: only on a terminal, not in CI)
    progress: bool | None = None


@dataclass
class Outcome:
    """The report, plus what goes to stdout apart from it: `--diff` diffs, or the fixed stdin text."""

    report: Report
    stdout: list[str] = field(default_factory=list)


def lint_paths(paths: Sequence[str], config: Config, options: Options) -> Outcome:
    """Lint `paths` (files and folders; "-" reads stdin) with the rules `config` enables."""
    enabled = {rule.code for rule in registry.all_rules() if config.enabled(rule)}
    engine = Engine(enabled)
    report = Report(command="lint", layout="flat", fatal_rules=frozenset(FATAL))
    outcome = Outcome(report)
    state = _Counts()
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
    try:
        if options.stdin_text is not None:
            source = Source(path=options.stdin_filename, text=options.stdin_text)
            _lint_source(engine, source, None, options, outcome, state)
        targets = _targets([p for p in paths if p != "-"], config, options)
        with Progress("torchdoctor lint", len(targets), options.progress, delay=PROGRESS_AFTER) as progress:
            for number, item in enumerate(targets, 1):
                progress.update(number, display_path(str(item.path)))
                if isinstance(item, Skipped):
                    _not_linted(report, str(item.path), item.reason)
                    continue
                _lint_target(engine, item, options, outcome, state)
    finally:
        sys.setrecursionlimit(old_limit)
    report.findings = [f for f in report.findings if f.rule in enabled]
    _summarise(report, options, state, [p for p in paths if p != "-"])
    return outcome


@dataclass
class _Counts:
    files: int = 0
    fixed: int = 0
    fixed_files: int = 0
    fixable: int = 0
    unsafe: int = 0


def _targets(paths: Sequence[str], config: Config, options: Options) -> list[Target | Skipped]:
    missing = [p for p in paths if not Path(p).exists() and not Path(p).is_symlink()]
    if missing:
        raise UsageError(f"{missing[0]}: no such file or folder")
    base = config.source.parent if config.source is not None else Path.cwd()
    patterns = [*config.exclude, *options.exclude]
    user = Patterns(patterns, base.absolute()) if patterns else None
    return list(discover([Path(p) for p in paths], Excluder(user, options.respect_gitignore)))


def _lint_target(engine: Engine, target: Target, options: Options, outcome: Outcome, state: _Counts) -> None:
    path = display_path(str(target.path))
    try:
        data = read_bytes(target.path, None if target.explicit else options.max_bytes)
        text, encoding = decode(data)
    except Unreadable as problem:
        if problem.kind == "too-large":
            _not_linted(outcome.report, str(target.path), problem.reason)
            return
        code = UNREADABLE if problem.kind == "unreadable" else UNDECODABLE
        outcome.report.add(registry.get(code).finding(file=path, line=problem.line or 1,
                                                      fields={"error": problem.reason}))
        return
    _lint_source(engine, Source(path=path, text=text, encoding=encoding), target, options, outcome, state)


def _not_linted(report: Report, path: str, reason: str) -> None:
    """A file met in a folder and skipped: a finding, so that every report format shows it."""
    report.add(registry.get(NOT_LINTED).finding(file=display_path(path), line=None, fields={"reason": reason}))


def _lint_source(
    engine: Engine, source: Source, target: Target | None, options: Options, outcome: Outcome, state: _Counts
) -> None:
    report = outcome.report
    state.files += 1
    try:
        tree = parse(source.text, source.path)
    except SyntaxError as exc:
        line = exc.lineno or 1
        column = max((exc.offset or 1) - 1, 0)
        finding = _syntax_error(source, line, column, exc.msg)
        if not is_suppressed(finding, source.line(line)):
            report.add(finding)
        return
    except (RecursionError, MemoryError, ValueError) as exc:
        report.add(registry.get(INTERNAL).finding(file=source.path, line=1,
                                                  fields={"error": describe(exc), "rule": "the parser"}))
        return
    if options.fix or options.diff:
        result, fixed = engine.lint_and_fix(source, options.unsafe_fixes)
        if fixed:
            state.fixed += fixed
            state.fixed_files += 1
            if options.diff:
                outcome.stdout.append(unified_diff(source.path, source.text, result.text))
            elif target is not None:
                _write(target.path, result.text, source.encoding)
                linecache.checkcache(str(target.path))
        if target is None and not options.diff:
            outcome.stdout.append(result.text)  # stdin: the (fixed) text goes to stdout
    else:
        result = engine.lint(source, tree)
    report.findings.extend(result.findings)
    for code, error in _first_per_rule(result.errors):
        label = "every rule" if code == "*" else code
        report.add(registry.get(INTERNAL).finding(file=source.path, line=1,
                                                  fields={"error": describe(error), "rule": label}))
    for finding in result.findings:
        if fixable(finding.fix, True):
            state.fixable += 1
            state.unsafe += not finding.fix.safe  # type: ignore[union-attr]


def _syntax_error(source: Source, line: int, column: int, error: str) -> Finding:
    """TD000 at the line the parser stopped; when that line is syntax of a newer Python (a
    PEP 695 generic on 3.11), the finding says which version the file needs instead of calling
    it invalid: the file is still not linted, and the exit status stays 2."""
    rule = registry.get(SYNTAX_ERROR)
    newer = newer_syntax(source.text, line)
    if newer is None:
        return rule.finding(file=source.path, line=line, column=column,
                            fields={"error": f"{error} (line {line})", "path": source.path})
    (major, minor), construct = newer
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    return rule.finding(file=source.path, line=line, column=column, variant="newer-syntax",
                        fields={"needs": f"{major}.{minor}", "construct": construct, "running": running},
                        evidence={"needs_python": f"{major}.{minor}", "python": running})


def display_path(path: str) -> str:
    """The path relative to the working directory when below it; links are shown as walked,
    not resolved (`core.locate.display_path` resolves them, and fails on a link loop)."""
    absolute = os.path.abspath(path)
    cwd = os.getcwd()
    if absolute == cwd or absolute.startswith(cwd.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, cwd)
    return path


def _first_per_rule(errors: list[tuple[str, BaseException]]) -> list[tuple[str, BaseException]]:
    seen: dict[str, BaseException] = {}
    for code, exc in errors:
        seen.setdefault(code, exc)
    return list(seen.items())


def _write(path: Path, text: str, encoding: str) -> None:
    try:
        with open(path, "w", encoding=encoding, newline="") as handle:
            handle.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write the fixed {path}: {exc.strerror}") from None


def _summarise(report: Report, options: Options, state: _Counts, paths: Sequence[str]) -> None:
    report.meta["files"] = state.files
    if state.files == 0:
        report.notices.append(f"linted 0 files: no Python file to lint in {', '.join(paths) or 'the paths given'}")
    fixed = f"{counted(state.fixed, 'finding')} in {counted(state.fixed_files, 'file')}"
    if options.fix and state.fixed and not options.diff:
        report.notices.append(f"fixed {fixed}")
    if options.diff and state.fixed:
        report.exit_status = ExitStatus.FINDINGS
        report.notices.append(f"the diff fixes {fixed}; the findings listed are those it leaves")
    if state.fixable and not options.fix and not options.diff:
        safe = state.fixable - state.unsafe
        if safe:
            report.notices.append(f"{counted(safe, 'finding')} can be fixed with `torchdoctor lint --fix`")
        if state.unsafe:
            more = "more " if safe else ""
            report.notices.append(f"{state.unsafe} {more}can be fixed with `--fix --unsafe-fixes` "
                                  "(read the rule's 'Fix safety' first)")
