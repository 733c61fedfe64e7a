"""A rule is one kind of bug: a stable code, a name, a category, a severity and its doc.

Rules carry no detection logic. `lint`, `check` and `run` each have detectors that point at a
rule, so the same bug gets the same code whichever command found it.
"""

from __future__ import annotations

import re
import string
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from torchdoctor.core.finding import Category, Finding, Fix, Severity

CODE_PATTERN = re.compile(r"^TD\d{3}$")
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
REQUIRED_SECTIONS = ("What it does", "Why is this bad?", "Example")
PROOF_KINDS = ("lint", "check", "run", "trace", "env", "dist", "tool")
#: the commands whose view of a rule `sees` may describe (the generated rule tables of their docs)
SEEING_COMMANDS = ("lint", "run")


@dataclass(frozen=True)
class Variant:
    """Another wording of a rule for one case its detectors tell apart, kept in the rule's file
    so all of a bug's prose lives in one place; a part left None is the rule's own template."""

    message: str | None = None
    hint: str | None = None


@dataclass(frozen=True)
class Rule:
    """One kind of bug.

    `message` and `hint` are `str.format` templates filled from the `fields` a detector
    passes to `finding`. `proof` names the harness that shows the doc's example triggers the rule and its
    "Use instead" does not (see tests/rules/test_docs.py). `fixable` says whether
    `torchdoctor lint --fix` can repair it safely, `unsafe_fix` that only `--fix --unsafe-fixes`
    can (the fix may change behaviour). `sees` says in one line, per command, what
    that command sees of the bug and where it points: the rule tables of docs/lint.md and
    docs/run.md are generated from it (`python -m torchdoctor.dev generate`). `variants` are
    named other wordings (`Variant`) a detector picks with `finding(variant=...)`.
    """

    code: str
    name: str
    category: Category
    severity: Severity
    message: str
    hint: str
    doc: str
    proof: str
    fixable: bool = False
    unsafe_fix: bool = False
    sees: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    variants: Mapping[str, Variant] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        if not CODE_PATTERN.match(self.code):
            raise ValueError(f"rule code {self.code!r} is not TD + 3 digits")
        if not NAME_PATTERN.match(self.name):
            raise ValueError(f"rule name {self.name!r} is not kebab-case")
        if self.proof not in PROOF_KINDS:
            raise ValueError(f"rule {self.code}: proof {self.proof!r} not in {PROOF_KINDS}")
        if unknown := set(self.sees) - set(SEEING_COMMANDS):
            raise ValueError(f"rule {self.code}: sees names {sorted(unknown)}, not one of {SEEING_COMMANDS}")
        if odd := [name for name, variant in self.variants.items()
                   if not NAME_PATTERN.match(name) or variant.message is None and variant.hint is None]:
            raise ValueError(f"rule {self.code}: variants {odd} are not kebab-case or set neither message nor hint")
        object.__setattr__(self, "doc", textwrap.dedent(self.doc).strip() + "\n")

    def finding(
        self,
        *,
        fields: Mapping[str, Any] | None = None,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
        end_line: int | None = None,
        end_column: int | None = None,
        evidence: dict[str, Any] | None = None,
        count: int = 1,
        rank: int | None = None,
        fix: Fix | None = None,
        message: str | None = None,
        hint: str | None = None,
        severity: Severity | None = None,
        variant: str | tuple[str, ...] | None = None,
    ) -> Finding:
        """A finding of this rule; `fields` fill the message and hint templates.

        `variant` names one of the rule's `variants`, whose templates replace the rule's (or a
        tuple of them, each setting a part the others leave: a cause in the message, a hint). A
        `message` or `hint` given as text (data, not the rule's prose) replaces its template. The
        fields must fill the templates in use exactly: a missing or unknown one raises at once,
        naming the rule.
        """
        fields = dict(fields or {})
        message_template, hint_template = self.templates(variant)
        self.check_fields(fields, message=message is None, hint=hint is None, variant=variant)
        return Finding(
            rule=self.code,
            name=self.name,
            category=self.category,
            severity=severity or self.severity,
            message=message if message is not None else message_template.format(**fields),
            hint=hint if hint is not None else hint_template.format(**fields),
            file=file,
            line=line,
            column=column,
            end_line=end_line,
            end_column=end_column,
            evidence=evidence,
            count=count,
            rank=rank,
            fix=fix,
        )

    def templates(self, variant: str | tuple[str, ...] | None = None) -> tuple[str, str]:
        """The message and hint templates of `variant` (the rule's own where it sets none); of
        several variants, each part from the one that sets it (two that set one part raise)."""
        if variant is None:
            return self.message, self.hint
        message: str | None = None
        hint: str | None = None
        for name in (variant,) if isinstance(variant, str) else variant:
            chosen = self.variants.get(name)
            if chosen is None:
                raise ValueError(f"{self.code} ({self.name}): no variant {name!r} (has {sorted(self.variants)})")
            if chosen.message is not None and message is not None or chosen.hint is not None and hint is not None:
                raise ValueError(f"{self.code} ({self.name}): variants {variant} set the same part twice")
            message = chosen.message if chosen.message is not None else message
            hint = chosen.hint if chosen.hint is not None else hint
        return (message if message is not None else self.message, hint if hint is not None else self.hint)

    @property
    def placeholders(self) -> frozenset[str]:
        """The template fields the message and the hint name."""
        return template_fields(self.message) | template_fields(self.hint)

    def check_fields(self, fields: Mapping[str, Any], *, message: bool = True, hint: bool = True,
                     variant: str | tuple[str, ...] | None = None) -> None:
        """Raise when `fields` name a placeholder neither template of `variant` has, or leave
        one of the templates in use (`message`, `hint`) unfilled."""
        message_template, hint_template = self.templates(variant)
        unknown = set(fields) - (template_fields(message_template) | template_fields(hint_template))
        needed = (template_fields(message_template) if message else frozenset()) | (
            template_fields(hint_template) if hint else frozenset())
        missing = needed - set(fields)
        if unknown or missing:
            said = [f"unknown {sorted(unknown)}"] if unknown else []
            said += [f"missing {sorted(missing)}"] if missing else []
            raise TypeError(f"{self.code} ({self.name}): template fields {', '.join(said)}")

    @property
    def sections(self) -> dict[str, str]:
        """The doc's `## Heading` sections, by heading."""
        return split_sections(self.doc)

    @property
    def example(self) -> str | None:
        """The first code block of `## Example` (the code that must trigger the rule)."""
        blocks = code_blocks(self.sections.get("Example", ""))
        return blocks[0] if blocks else None

    @property
    def use_instead(self) -> str | None:
        """The code block after "Use instead:" (similar code that must not trigger it)."""
        text = self.sections.get("Example", "")
        _, _, after = text.partition("Use instead:")
        blocks = code_blocks(after)
        return blocks[0] if blocks else None

    @property
    def summary(self) -> str:
        """The first sentence of "What it does", for rule lists."""
        what = " ".join(self.sections.get("What it does", "").split())
        match = re.match(r"(.+?[^.]\.)(?=\s+[A-Z`(]|$)", what)
        return match.group(1) if match else what


def template_fields(template: str) -> frozenset[str]:
    """The names a `str.format` template fills (`{name}`, `{name.attr}`, `{name:>4}` all name `name`)."""
    names = set()
    for _, name, _, _ in string.Formatter().parse(template):
        if name is not None:
            match = re.match(r"[^.\[]*", name)
            names.add(match.group(0) if match else name)
    return frozenset(names)


def split_sections(doc: str) -> dict[str, str]:
    sections: dict[str, str] = {}
    current: str | None = None
    for line in doc.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = ""
        elif current is not None:
            sections[current] += line + "\n"
    return sections


def code_blocks(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"```[a-z]*\n(.*?)```", text, re.S)]
