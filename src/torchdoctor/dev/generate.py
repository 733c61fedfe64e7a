"""`python -m torchdoctor.dev generate`: every text derived from the rules, written from them.

A rule's words live in its file (rules/): its doc, its templates and `sees`, the line each
command's documentation gives it. What the docs repeat of them (docs/rules.md, the rule tables
of docs/lint.md and docs/run.md, the counts in the README) is written here, so that adding a
rule edits no document by hand and no table can drift; `--check` says which file is stale
(tests/dev/test_generate.py runs it on the checkout).

A generated block of a hand-written page lies between two markers:

    <!-- generated: lint rules -->
    ...
    <!-- end generated -->

`lint rules`: every rule lint reports. `run rules: compile, memory`: the rules run reports in
those categories; `run rules: the rest`: those in the categories no other block of the page names.
`health checks`: every check of `torchdoctor check`, in the report's order, with its `DOES` (the
TITLE where a check has none) and its RULES. `code blocks`: each category's block of codes for
new rules (core/codes.py), its next free code and how many rules the category has.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from torchdoctor.catalog.reporters import commands_of
from torchdoctor.catalog.rules_command import as_markdown
from torchdoctor.core import codes, registry
from torchdoctor.core.errors import UsageError
from torchdoctor.core.finding import Category
from torchdoctor.core.rule import Rule

BLOCK = re.compile(r"^(<!-- generated: (?P<what>[^>]*?) -->\n)(?P<body>.*?)^(<!-- end generated -->)", re.S | re.M)
#: a marker opens a line (a page may quote one in its text, as CONTRIBUTING.md does)
OPENING = re.compile(r"^<!-- generated:", re.M)
#: the pages with generated blocks (a page without a block is left alone: the scaffold's copy of a checkout)
PAGES = ("docs/lint.md", "docs/run.md", "docs/check.md", "CONTRIBUTING.md")
#: the first code that is a rule: TD000-TD099 are the tool's own (a file lint could not read)
FIRST_RULE = "TD100"
THE_REST = "the rest"


@dataclass(frozen=True)
class Count:
    """A number a page states about the rules, found by the words around it."""

    page: str
    pattern: str  # one group: the number
    value: Callable[[], int]

    def apply(self, text: str) -> str:
        return re.sub(self.pattern, lambda m: m.group(0).replace(m.group(1), str(self.value()), 1), text)


def lint_rules() -> list[Rule]:
    return [rule for rule in registry.all_rules() if "lint" in commands_of(rule.code)]


def health_checks() -> tuple[ModuleType, ...]:
    from torchdoctor.health.runner import CHECKS  # imports torch: only when a page needs them

    return CHECKS


def _health_checks() -> int:
    return len(health_checks())


COUNTS = (
    Count("README.md", r"static analysis: (\d+) rules", lambda: sum(r.code >= FIRST_RULE for r in lint_rules())),
    Count("docs/lint.md", r"\n(\d+) rules have a lint detector", lambda: sum(r.code >= FIRST_RULE for r in lint_rules())),
    Count("README.md", r"(\d+) rules, each with a stable code", lambda: len(registry.all_rules())),
    Count("README.md", r"(\d+) checks on a private copy", _health_checks),
    Count("docs/check.md", r"(\d+) checks on a private copy", _health_checks),
    Count("docs/check.md", r"## The (\d+) checks", _health_checks),
)


def derived(root: Path) -> dict[Path, str]:
    """What each derived file of the checkout at `root` should hold (only the files it has)."""
    texts: dict[Path, str] = {}
    rules_md = root / "docs" / "rules.md"
    if rules_md.parent.is_dir():
        texts[rules_md] = as_markdown(list(registry.all_rules()))
    for page in dict.fromkeys([*PAGES, *(count.page for count in COUNTS)]):
        path = root / page
        if not path.is_file():
            continue
        text = fill_blocks(path.read_text(encoding="utf-8"), page)
        for count in COUNTS:
            if count.page == page:
                text = count.apply(text)
        texts[path] = text
    return texts


def stale(root: Path) -> list[Path]:
    """The derived files whose text is not what the rules give."""
    return list(_stale_texts(root))


def generate(root: Path) -> list[Path]:
    """Write every stale derived file; the files written."""
    texts = _stale_texts(root)
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
    return list(texts)


def _stale_texts(root: Path) -> dict[Path, str]:
    """Each stale derived file and the text it should hold (the rules are read once)."""
    return {path: text for path, text in derived(root).items()
            if not path.is_file() or path.read_text(encoding="utf-8") != text}


def fill_blocks(text: str, page: str) -> str:
    """`text` with each generated block's body written from the rules."""
    named = [category for match in BLOCK.finditer(text) for category in _run_categories(match["what"], page) or ()]
    if len(OPENING.findall(text)) != len(BLOCK.findall(text)):
        raise UsageError(f"{page}: a `<!-- generated: ... -->` marker without its `<!-- end generated -->`")

    def body(match: re.Match[str]) -> str:
        what = match["what"]
        if what == "lint rules":
            table = lint_table(lint_rules())
        elif what == "health checks":
            table = check_table(health_checks())
        elif what == "code blocks":
            table = blocks_table(registry.all_rules())
        elif (categories := _run_categories(what, page)) is not None:
            chosen = set(categories) if categories else {c.value for c in Category} - set(named)
            table = run_table([r for r in registry.all_rules() if "run" in commands_of(r.code) and r.category.value in chosen])
        else:
            raise UsageError(f"{page}: unknown generated block {what!r} (lint rules; run rules: CATEGORY, ...; "
                             f"run rules: {THE_REST}; health checks; code blocks)")
        return match[1] + table + match[4]

    return BLOCK.sub(body, text)


def _run_categories(what: str, page: str) -> list[str] | None:
    """The categories a `run rules: ...` block names ([] for the rest); None for another block."""
    head, _, tail = what.partition(":")
    if head.strip() != "run rules":
        return None
    if tail.strip() == THE_REST:
        return []
    categories = [name.strip() for name in tail.split(",")]
    if unknown := set(categories) - {c.value for c in Category}:
        raise UsageError(f"{page}: {what!r} names no category {sorted(unknown)}")
    return categories


def lint_table(rules: Iterable[Rule]) -> str:
    rows = ["| code | name | severity | fix | catches |", "| --- | --- | --- | --- | --- |"]
    for rule in rules:
        fix = "safe " if rule.fixable else "unsafe " if rule.unsafe_fix else ""
        rows.append(f"| {rule.code} | `{rule.name}` | {rule.severity.value} | {fix}| {_cell(rule.sees.get('lint') or rule.summary)} |")
    return "\n".join(rows) + "\n"


def run_table(rules: Iterable[Rule]) -> str:
    """Sorted by category (the contract's order), then code: a category's bugs read together."""
    order = {category: number for number, category in enumerate(Category)}
    rows = ["| rule | category | severity | what run sees, and where it points |", "| --- | --- | --- | --- |"]
    for rule in sorted(rules, key=lambda r: (order[r.category], r.code)):
        rows.append(f"| {rule.code} `{rule.name}` | {rule.category.value} | {rule.severity.value} | "
                    f"{_cell(rule.sees.get('run') or rule.summary)} |")
    return "\n".join(rows) + "\n"


def check_table(checks: Iterable[ModuleType]) -> str:
    """The health checks in the report's order: what each does, and the rules it reports."""
    rows = ["| # | check (`--skip` name) | what it does | rules |", "|---|---|---|---|"]
    for number, check in enumerate(checks, 1):
        does = getattr(check, "DOES", None) or check.TITLE
        rows.append(f"| {number} | `{check.NAME}` | {_cell(does)} | {', '.join(check.RULES)} |")
    return "\n".join(rows) + "\n"


def blocks_table(rules: Iterable[Rule]) -> str:
    """Each category's block for new codes, in the order of the blocks."""
    rules = list(rules)
    rows = ["| category | codes of its new rules | next free | rules (any code) |", "| --- | --- | --- | --- |"]
    for category, block in codes.BLOCKS.items():
        free = codes.next_free(category, (rule.code for rule in rules)) or "none: give it another block"
        count = sum(rule.category is category for rule in rules)
        rows.append(f"| {category.value} | {codes.shown(block)} | {free} | {count} |")
    return "\n".join(rows) + "\n"


def _cell(text: str) -> str:
    """`text` as one table cell: a `|` would end it."""
    return " ".join(text.split()).replace("|", "\\|")
