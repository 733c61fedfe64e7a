"""Scaffold a new rule: the rule file with its doc headings, a stub for each chosen detector
(lint check, run detector, health check), which its command finds by itself (core/plugins.py),
and the two-sided tests. The new tests fail until the detector finds the flagged side: that is the
point, a scaffold must not look finished."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torchdoctor
from torchdoctor.core import codes, registry
from torchdoctor.core.errors import UsageError
from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import CODE_PATTERN, NAME_PATTERN, SEEING_COMMANDS

#: the detectors a rule can have, and what each is
DETECTOR_KINDS = {
    "lint": "lint check (src/torchdoctor/linter/checks/) and a fixture of flagged and correct code",
    "run": "run detector (src/torchdoctor/observe/detectors/) and its two-sided test",
    "check": "health check (src/torchdoctor/health/checks/) and its two-sided test",
}


@dataclass(frozen=True)
class NewRule:
    code: str
    name: str
    category: Category
    severity: Severity
    kinds: tuple[str, ...]

    @property
    def module(self) -> str:
        return self.name.replace("-", "_")

    @property
    def class_name(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("-"))

    @property
    def package(self) -> str:
        return self.category.value.replace("-", "_")

    @property
    def proof(self) -> str:
        """The cheapest harness that can prove the doc's example: lint, then check, then run."""
        return next((kind for kind in ("lint", "check", "run") if kind in self.kinds), "lint")


def checkout_root() -> Path:
    """The source checkout this torchdoctor is imported from (an editable install)."""
    root = Path(torchdoctor.__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file() or not (root / "tests").is_dir():
        raise UsageError("not a source checkout: run from a clone installed with `pip install -e .`, or pass --root")
    return root


def write_rule(rule: NewRule, root: Path) -> list[Path]:
    """Write every file of `rule` under `root`; refuse before writing anything if one exists."""
    _validate(rule)
    files = {root / "src" / "torchdoctor" / "rules" / rule.package / f"{rule.module}.py": _rule_file(rule)}
    if "lint" in rule.kinds:
        files[root / "src" / "torchdoctor" / "linter" / "checks" / f"{rule.module}.py"] = _LINT_CHECK.format(**_fields(rule))
        files[root / "tests" / "lint" / "fixtures" / f"{rule.module}.py"] = _LINT_FIXTURE.format(**_fields(rule))
    if "run" in rule.kinds:
        files[root / "src" / "torchdoctor" / "observe" / "detectors" / f"{rule.module}.py"] = _RUN_DETECTOR.format(**_fields(rule))
        files[root / "tests" / "observe" / "detectors" / f"test_{rule.module}.py"] = _RUN_TEST.format(**_fields(rule))
    if "check" in rule.kinds:
        files[root / "src" / "torchdoctor" / "health" / "checks" / f"{rule.module}.py"] = _HEALTH_CHECK.format(**_fields(rule))
        files[root / "tests" / "health" / f"test_{rule.module}.py"] = _HEALTH_TEST.format(**_fields(rule))
    existing = [path for path in files if path.exists()]
    if existing:
        raise UsageError(f"{existing[0]} exists already: choose another name")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(files)


def _validate(rule: NewRule) -> None:
    if not CODE_PATTERN.match(rule.code):
        raise UsageError(f"{rule.code!r} is not a rule code (TD followed by three digits)")
    if not NAME_PATTERN.match(rule.name):
        raise UsageError(f"{rule.name!r} is not a kebab-case name (lowercase words joined by '-')")
    taken = {r.code: r.name for r in registry.all_rules()}
    if rule.code in taken:
        raise UsageError(f"{rule.code} is taken by {taken[rule.code]}")
    if rule.name in taken.values():
        raise UsageError(f"a rule is named {rule.name} already")
    if not codes.allowed(rule.category, rule.code):
        raise UsageError(f"{rule.code} is outside the {rule.category.value} block "
                         f"({codes.shown(codes.BLOCKS[rule.category])}): a new rule takes a code of its category's "
                         "block (core/codes.py); leave out --code for the next free one")
    if not rule.kinds:
        raise UsageError("choose at least one detector: --lint, --run or --check")


def proposed_code(category: Category) -> str:
    """The next free code of `category`'s block."""
    found = codes.next_free(category, (rule.code for rule in registry.all_rules()))
    if found is None:
        raise UsageError(f"the {category.value} block ({codes.shown(codes.BLOCKS[category])}) is full: "
                         "give the category another block in core/codes.py")
    return found


def _fields(rule: NewRule) -> dict[str, str]:
    return {
        "code": rule.code, "name": rule.name, "module": rule.module, "cls": rule.class_name,
        "package": rule.package, "category": rule.category.name, "severity": rule.severity.name,
        "proof": rule.proof,
    }


def _rule_file(rule: NewRule) -> str:
    return _RULE.format(**_fields(rule), example=_EXAMPLES[rule.proof], sees=_sees(rule))


def _sees(rule: NewRule) -> str:
    """The rule's line in the generated table of each command's doc that reports it."""
    lines = [f'        "{kind}": "TODO: what {kind} sees of the bug, and the line it points at",\n'
             for kind in rule.kinds if kind in SEEING_COMMANDS]
    return "    sees={\n" + "".join(lines) + "    },\n" if lines else ""


_RULE = '''"""{code} {name}."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="{code}",
    name="{name}",
    category=Category.{category},
    severity=Severity.{severity},
    proof="{proof}",
    # one line each, at the user's line: what is wrong there ({{fields}} come from the detectors)...
    message="TODO: what is wrong at this line, with the values seen ({{what}})",
    # ...and how to fix it
    hint="TODO: the change that fixes it, as code where possible.",
{sees}    doc="""
## What it does
TODO: the pattern this rule flags, in one paragraph.

## Why is this bad?
TODO: what goes wrong (the error text, or the silent effect on training), seen on real torch.

## Example
{example}
""",
)
'''

_EXAMPLES = {
    "lint": '''```python
import torch

x = torch.zeros(3)  # TODO: a small file that `torchdoctor lint` must flag
```

Use instead:
```python
import torch

x = torch.zeros(3)  # TODO: the similar correct code, which must not be flagged
```''',
    "check": '''```python
import torch
from torch import nn

def make():  # TODO: a factory whose training `torchdoctor check FILE:make` must flag
    model = nn.Linear(8, 3)
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss(),
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1)}
```

Use instead:
```python
import torch
from torch import nn

def make():  # TODO: the similar correct factory, which must not be flagged
    model = nn.Linear(8, 3)
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss(),
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1)}
```''',
    "run": '''```python
import torch
from torch import nn

model = nn.Linear(4, 1)  # TODO: a script whose run `torchdoctor run` must flag
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    optimizer.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    optimizer.step()
```

Use instead:
```python
import torch
from torch import nn

model = nn.Linear(4, 1)  # TODO: the similar correct script, which must not be flagged
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    optimizer.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    optimizer.step()
```''',
}

_LINT_CHECK = '''"""{code} {name}: the lint detector (docs/lint-rules-dev.md)."""

from __future__ import annotations

import ast

from torchdoctor.linter.api import Context, lint_check
from torchdoctor.rules.{package}.{module} import RULE


@lint_check(RULE, ast.Call, names={{"TODO_callee"}})
def {module}(node: ast.Call, ctx: Context) -> None:
    """TODO: decide from `node` and what the walk keeps on `ctx`, then
    `ctx.report(RULE, node, fields={{"what": ...}})` at the line the user must change."""
'''

_LINT_FIXTURE = '''"""{code} {name}: the flagged code and the similar correct code, side by side.
An `expect` comment naming {code} marks each line that must be flagged; every other line must stay silent."""

import torch

# flagged (TODO: the bad pattern; the marker goes on the line the finding points at)
bad = torch.zeros(3)  # expect: {code}

# not flagged (TODO: the similar correct code a careful user writes)
good = torch.zeros(3)
'''

_RUN_DETECTOR = '''"""{code} {name}: the run detector (docs/run-detectors-dev.md)."""

from __future__ import annotations

from torchdoctor.rules.{package}.{module} import RULE
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Step


class {cls}(Detector):
    rules = (RULE,)

    def on_step_end(self, event: Step) -> None:
        """TODO: decide from the events you override (warm-up steps are the cheap time to
        look), then `self.ctx.report(RULE, fields={{"what": ...}})`: the finding points at the user's line."""
'''

_RUN_TEST = '''"""{code} {name}, on both sides."""

from __future__ import annotations

import torch
from torch import nn

from tests.observe.detectors.conftest import observing
from torchdoctor.observe.detectors.{module} import {cls}


def train(buggy: bool, steps: int = 8) -> None:
    """TODO: a small training loop with the bug when `buggy`, the similar correct code otherwise."""
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        optimizer.zero_grad()
        model(torch.randn(8, 4)).pow(2).mean().backward()
        optimizer.step()


def test_the_bug_is_flagged() -> None:
    with observing({cls}) as observed:
        train(buggy=True)
    assert observed.codes == {{"{code}"}}


def test_similar_correct_code_is_not_flagged() -> None:
    with observing({cls}) as observed:
        train(buggy=False)
    assert observed.codes == set()
'''

_HEALTH_CHECK = '''"""{code} {name}: the health check (docs/check-dev.md)."""

from __future__ import annotations

from torchdoctor.health.outcome import Outcome
from torchdoctor.health.context import CheckContext
from torchdoctor.introspect.sites import where  # noqa: F401 (for the findings: `**where(site)`)
from torchdoctor.rules.{package}.{module} import RULE

NAME = "{module}"
TITLE = "TODO: what this check confirms, as a sentence"
#: what the check does, in its row of docs/check.md's table (`python -m torchdoctor.dev generate`)
DOES = "TODO: what the check looks at and how, in a line"
RULES = (RULE.code,)


def run(ctx: CheckContext) -> Outcome:
    """TODO: look at `ctx.subject` (model, data, loss_fn, optimizer) on copies, never changing the
    user's objects; return `Outcome([RULE.finding(**where(site), fields={{"what": ...}})])` when the bug is there."""
    return Outcome(detail="TODO: what was confirmed")
'''

_HEALTH_TEST = '''"""{code} {name}, on both sides."""

from __future__ import annotations

from tests.health.conftest import codes

BUGGY = """
import torch
from torch import nn

def make():  # TODO: a factory with the bug
    model = nn.Linear(8, 3)
    x, y = torch.randn(16, 8), torch.arange(16) % 3
    return {{"model": model, "data": (x, y), "loss_fn": nn.CrossEntropyLoss(),
            "optimizer": torch.optim.SGD(model.parameters(), lr=0.1)}}
"""

CORRECT = BUGGY  # TODO: the similar correct factory


def test_the_bug_is_flagged(check_source) -> None:  # type: ignore[no-untyped-def]
    assert "{code}" in codes(check_source(BUGGY))


def test_similar_correct_code_is_not_flagged(check_source) -> None:  # type: ignore[no-untyped-def]
    assert "{code}" not in codes(check_source(CORRECT))
'''
