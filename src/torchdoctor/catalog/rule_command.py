"""`torchdoctor rule CODE`: one rule's documentation."""

from __future__ import annotations

import argparse
import sys

from torchdoctor.catalog.reporters import reported_by
from torchdoctor.core import registry
from torchdoctor.core.rule import Rule

HELP = "print one rule's documentation (by code or name)"
REPORTS = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("code", metavar="CODE", help="a rule code such as TD101, or its name")


def execute(args: argparse.Namespace, _config: None) -> int:
    sys.stdout.write(describe(registry.get(args.code)))
    return 0


def describe(rule: Rule) -> str:
    header = [
        f"# {rule.name} ({rule.code})",
        "",
        f"Category: {rule.category.value}",
        f"Default severity: {rule.severity.value}",
        f"Fix: {'safe automatic fix with `torchdoctor lint --fix`' if rule.fixable else 'by hand'}",
        f"Reported by: {reported_by(rule.code) or 'no command yet'}",
        "",
        "",
    ]
    return "\n".join(header) + rule.doc
