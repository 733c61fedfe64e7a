"""`torchdoctor lint PATH...`: static analysis of PyTorch training code (no code is run).

This module only wires the command line to `runner.lint_paths`; it imports neither torch nor
the rule checks until the command runs.
"""

from __future__ import annotations

import argparse
import sys

from torchdoctor.core.config import Config
from torchdoctor.core.errors import UsageError
from torchdoctor.core.report import Report

HELP = "find training bugs in Python files and folders without running them (ruff-style)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", default=["."], metavar="PATH",
                        help="files and folders to lint (default: .); '-' reads the source from stdin")
    group = parser.add_argument_group("lint options")
    group.add_argument("--fix", action="store_true", help="apply the safe fixes to the files")
    group.add_argument("--unsafe-fixes", action="store_true",
                       help="with --fix or --diff, also apply fixes whose rule doc says they can change behaviour")
    group.add_argument("--diff", action="store_true",
                       help="print the fixes as a unified diff instead of writing them (exit 1 if there are any)")
    group.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                       help="skip paths matching this gitignore-style pattern inside folders (repeatable)")
    group.add_argument("--no-respect-gitignore", dest="respect_gitignore", action="store_false",
                       help="also lint files that .gitignore files exclude")
    group.add_argument("--stdin-filename", default=None, metavar="PATH",
                       help="the name to report for source read from stdin ('-')")


def execute(args: argparse.Namespace, config: Config) -> Report:
    from torchdoctor.linter.runner import Options, lint_paths

    stdin_text = None
    if "-" in args.paths:
        if args.fix and not args.diff and len(args.paths) > 1:
            raise UsageError("--fix with '-' prints the fixed source: lint stdin on its own")
        stdin_text = sys.stdin.read()
    options = Options(
        fix=args.fix,
        unsafe_fixes=args.unsafe_fixes,
        diff=args.diff,
        respect_gitignore=args.respect_gitignore,
        exclude=tuple(args.exclude),
        stdin_text=stdin_text,
        stdin_filename=args.stdin_filename or "<stdin>",
    )
    outcome = lint_paths(args.paths, config, options)
    if outcome.stdout:
        sys.stdout.write("".join(outcome.stdout))
        sys.stdout.flush()
    if options.diff or (options.fix and stdin_text is not None):
        outcome.report.stream = "stderr"  # stdout carries the diff / the fixed source
    return outcome.report
