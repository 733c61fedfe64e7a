"""`torchdoctor rules`: every rule, one line each, filterable by category."""

from __future__ import annotations

import argparse
import json
import re
import sys

from torchdoctor.catalog.reporters import commands_of, reported_by, reporters
from torchdoctor.core import registry
from torchdoctor.core.errors import UsageError
from torchdoctor.core.finding import Category
from torchdoctor.core.rule import Rule

HELP = "list the rules (code, name, category, severity, what each catches)"
REPORTS = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--category", action="append", help="only rules of this category (repeatable)")
    parser.add_argument("--format", choices=("text", "json", "markdown"), default="text")


def execute(args: argparse.Namespace, _config: None) -> int:
    categories = {c.value for c in Category}
    for category in args.category or []:
        if category not in categories:
            raise UsageError(f"unknown category {category!r}; one of: {', '.join(sorted(categories))}")
    rules = [r for r in registry.all_rules() if not args.category or r.category.value in args.category]
    sys.stdout.write({"text": as_text, "json": as_json, "markdown": as_markdown}[args.format](rules))
    return 0


def as_text(rules: list[Rule]) -> str:
    """One line per rule, with the commands that report it (`lint, run`): a rule only `run` can
    see is no use to someone who only lints."""
    lines = [f"{'code':<5}  {'name':<40} {'category':<15} {'severity':<8} {'reported by':<16} what it catches"]
    lines += [
        f"{r.code}  {r.name:<40} {r.category.value:<15} {r.severity.value:<8} {', '.join(commands_of(r.code)):<16} {_short(r.summary)}"
        for r in rules
    ]
    return "\n".join(lines) + f"\n\n{len(rules)} rules; `torchdoctor rule CODE` prints one rule's doc.\n"


def _short(text: str, width: int = 90) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def as_json(rules: list[Rule]) -> str:
    data = [
        {
            "code": r.code,
            "name": r.name,
            "category": r.category.value,
            "severity": r.severity.value,
            "fixable": r.fixable,
            "summary": r.summary,
            "reported_by": [{"command": command, "file": file} for command, file in reporters().get(r.code, ())],
        }
        for r in rules
    ]
    return json.dumps(data, indent=2) + "\n"


def as_markdown(rules: list[Rule]) -> str:
    """docs/rules.md: the list, then every rule's doc (written by `python -m torchdoctor.dev generate`)."""
    out = [
        "# torchdoctor rules",
        "",
        "Generated from the rules by `python -m torchdoctor.dev generate`; do not edit by hand.",
        "",
        "| code | name | category | severity | fix | reported by | what it catches |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rules:
        fix = "yes" if r.fixable else ""
        commands = ", ".join(commands_of(r.code))
        out.append(f"| [{r.code}](#{r.code.lower()}) | {r.name} | {r.category.value} | {r.severity.value} | {fix} | {commands} | {r.summary} |")
    for r in rules:
        out += ["", f"## {r.code}", "", f"**{r.name}** · category `{r.category.value}` · default severity `{r.severity.value}`", ""]
        places = reported_by(r.code)
        out += [f"Reported by: {places}.", ""] if places else []
        out.append(re.sub(r"^## ", "### ", r.doc, flags=re.M))
    return "\n".join(out).rstrip() + "\n"
