"""Which commands report a rule, and from which files: read off the source, so it can never go
stale. A module reports a rule when it imports the rule's `RULE` object (lint checks, run
detectors and crash explainers, health checks), imports from a table of rules in `rules/`
(rules/loss/wrong_inputs.py: every rule the table names), or names a code (env's and dist's
verdict tables). Nothing is imported or run, so this works without torch.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import torchdoctor
from torchdoctor.core import registry

PACKAGE = Path(torchdoctor.__file__).resolve().parent

#: command -> the packages that hold its detectors (check's is named health, see CONTRIBUTING.md;
#: run's detectors and explainers live in the observation engine, its cross-rank verdicts in run/)
COMMANDS = {"lint": ("linter",), "run": ("observe", "run"), "check": ("health",), "env": ("env",),
            "dist": ("dist",), "trace": ("trace",)}
_CODE = re.compile(r"TD\d{3}")


@lru_cache(maxsize=1)
def reporters() -> dict[str, tuple[tuple[str, str], ...]]:
    """Rule code -> ((command, file relative to the package), ...), in COMMANDS' order."""
    rule_files = list((PACKAGE / "rules").rglob("*.py"))
    modules: dict[str, set[str]] = {_rule_module(path): set(_own_code(path)) for path in rule_files}
    for path in rule_files:  # a table of rules stands for every rule it imports
        if not modules[_rule_module(path)]:
            modules[_rule_module(path)] = set(_codes_in(path, modules, tables=False))
    known = {rule.code for rule in registry.all_rules()}
    found: dict[str, list[tuple[str, str]]] = {}
    for command, packages in COMMANDS.items():
        for path in sorted(path for package in packages for path in (PACKAGE / package).rglob("*.py")):
            shown = path.relative_to(PACKAGE).as_posix()
            for code in sorted(set(_codes_in(path, modules)) & known):
                found.setdefault(code, []).append((command, shown))
    return {code: tuple(places) for code, places in found.items()}


def reported_by(code: str) -> str:
    """`lint (linter/checks/loss_inputs.py), run (observe/crash/loss.py, observe/session.py)`; "" for none."""
    files: dict[str, list[str]] = {}
    for command, file in reporters().get(code, ()):
        files.setdefault(command, []).append(file)
    return ", ".join(f"{command} ({', '.join(shown)})" for command, shown in files.items())


def commands_of(code: str) -> list[str]:
    """The commands that report `code`, each once, in COMMANDS' order."""
    return list(dict.fromkeys(command for command, _ in reporters().get(code, ())))


def _rule_module(path: Path) -> str:
    return "torchdoctor." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)


def _own_code(path: Path) -> Iterator[str]:
    match = re.search(r'code="(TD\d{3})"', path.read_text(encoding="utf-8"))
    if match:
        yield match.group(1)


def _codes_in(path: Path, modules: dict[str, set[str]], tables: bool = True) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in modules:
            names = {alias.name for alias in node.names}
            if "RULE" in names or (tables and len(modules[node.module]) > 1):
                yield from modules[node.module]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _CODE.fullmatch(node.value):
            yield node.value
