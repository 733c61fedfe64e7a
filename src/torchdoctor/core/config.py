"""Configuration: `[tool.torchdoctor]` in pyproject.toml, overridden by the command line.

```toml
[tool.torchdoctor]
select = ["ALL"]                 # codes, code prefixes, rule names or categories
ignore = ["TD150", "performance"]
exclude = ["third_party/", "*_pb2.py"]   # lint: paths to skip, gitignore-style
fail-on = "error"
[tool.torchdoctor.severity]
TD101 = "warning"
```
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from torchdoctor.core import registry
from torchdoctor.core.errors import UsageError
from torchdoctor.core.finding import Category, Finding, Severity
from torchdoctor.core.report import FailOn
from torchdoctor.core.rule import Rule
from torchdoctor.core.suppress import drop_suppressed

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

FAIL_ON = tuple(choice.value for choice in FailOn)


@dataclass(frozen=True)
class Config:
    """Which rules run, at which severity, and what fails the command."""

    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    severity: Mapping[str, Severity] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()
    fail_on: FailOn = FailOn.ERROR
    source: Path | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "fail_on", FailOn(self.fail_on))  # `Config(fail_on="warning")` reads as the enum

    def enabled(self, rule: Rule) -> bool:
        """Selected and not ignored; the more specific selector wins, as in Ruff."""
        chosen = _best(rule, self.select)
        dropped = _best(rule, self.ignore)
        if chosen is None:
            return False
        return dropped is None or chosen > dropped

    def severity_of(self, rule: Rule) -> Severity:
        for key in (rule.code, rule.name):
            if key in self.severity:
                return self.severity[key]
        return rule.severity

    def apply(self, findings: Iterable[Finding]) -> list[Finding]:
        """Drop findings of disabled rules and apply severity overrides.

        Findings whose rule is unknown to the registry (none should be) pass unchanged.
        """
        rules = {rule.code: rule for rule in registry.all_rules()}
        kept: list[Finding] = []
        for finding in findings:
            rule = rules.get(finding.rule)
            if rule is None:
                kept.append(finding)
                continue
            if not self.enabled(rule):
                continue
            override = self.severity.get(rule.code) or self.severity.get(rule.name)
            kept.append(finding.with_severity(override) if override else finding)
        return kept

    def settle(self, findings: Iterable[Finding]) -> list[Finding]:
        """What the user sees of `findings`: those of enabled rules, at their configured severity,
        and not silenced on their own line (`# noqa`); the same step for every command and API."""
        return drop_suppressed(self.apply(findings))

    def enabled_codes(self) -> frozenset[str] | None:
        """The codes of the enabled rules; None when every rule is (nothing to filter)."""
        rules = registry.all_rules()
        codes = frozenset(rule.code for rule in rules if self.enabled(rule))
        return None if len(codes) == len(rules) else codes

    def with_overrides(
        self,
        *,
        select: Sequence[str] | None = None,
        ignore: Sequence[str] | None = None,
        severity: Sequence[str] | None = None,
        fail_on: str | None = None,
        exclude: Sequence[str] | None = None,
    ) -> Config:
        """Command-line options: `--select` replaces, `--ignore`/`--severity`/`--exclude` add."""
        changes: dict[str, Any] = {}
        if select:
            registry.validate_selectors(select)
            changes["select"] = tuple(select)
        if ignore:
            registry.validate_selectors(ignore)
            changes["ignore"] = self.ignore + tuple(ignore)
        if severity:
            merged = dict(self.severity)
            for item in severity:
                key, sep, value = item.partition("=")
                if not sep:
                    raise UsageError(f"--severity {item!r}: expected CODE=error|warning|info")
                merged.update(_severities({key.strip(): value.strip()}, "--severity"))
            changes["severity"] = merged
        if fail_on:
            changes["fail_on"] = _fail_on(fail_on, "--fail-on")
        if exclude:
            changes["exclude"] = self.exclude + tuple(exclude)
        return replace(self, **changes)


def _best(rule: Rule, selectors: Iterable[str]) -> int | None:
    """How specific the most specific matching selector is (None when none matches)."""
    best: int | None = None
    for selector in selectors:
        if registry.matches(rule, selector):
            score = _specificity(selector)
            best = score if best is None else max(best, score)
    return best


def _specificity(selector: str) -> int:
    """ALL < category < code prefix (TD1 < TD10) < full code or rule name."""
    if selector.upper() == "ALL":
        return 0
    if selector.upper().startswith("TD"):
        return len(selector)
    if selector in {c.value for c in Category}:
        return 1
    return 5


def _severities(table: Mapping[str, Any], where: str) -> dict[str, Severity]:
    out: dict[str, Severity] = {}
    for key, value in table.items():
        try:
            severity = Severity(str(value))
        except ValueError:
            raise UsageError(f"{where}: {key} = {value!r}: severity must be error, warning or info") from None
        rule = registry.get(key)
        out[rule.code] = severity
    return out


def _fail_on(value: str, where: str) -> FailOn:
    if value not in FAIL_ON:
        raise UsageError(f"{where}: {value!r} is not one of {', '.join(FAIL_ON)}")
    return FailOn(value)


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start`."""
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load(path: Path | None = None, start: Path | None = None) -> Config:
    """Read `[tool.torchdoctor]` from `path`, or from the nearest pyproject.toml above `start`."""
    if path is None:
        path = find_pyproject(start or Path.cwd())
        if path is None:
            return Config()
    elif not path.is_file():
        raise UsageError(f"config file {str(path)!r} does not exist")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not valid TOML ({exc}); fix the file or pass --config") from None
    table = data.get("tool", {}).get("torchdoctor", {})
    if not isinstance(table, dict):
        raise UsageError(f"{path}: [tool.torchdoctor] must be a table")
    where = f"{path} [tool.torchdoctor]"
    known = {"select", "ignore", "severity", "exclude", "fail-on", "fail_on"}
    extra = set(table) - known - {"lint", "run", "check", "env", "dist"}
    if extra:
        raise UsageError(f"{where}: unknown key(s) {', '.join(sorted(extra))}; known: {', '.join(sorted(known))}")
    select = _strings(table.get("select", ["ALL"]), f"{where} select")
    ignore = _strings(table.get("ignore", []), f"{where} ignore")
    registry.validate_selectors([*select, *ignore])
    return Config(
        select=select,
        ignore=ignore,
        severity=_severities(table.get("severity", {}), f"{where} severity"),
        exclude=_strings(table.get("exclude", []), f"{where} exclude"),
        fail_on=_fail_on(str(table.get("fail-on", table.get("fail_on", "error"))), f"{where} fail-on"),
        source=path,
    )


def for_api(*, select: Sequence[str] | None = None, ignore: Sequence[str] | None = None,
            config: str | os.PathLike[str] | None = None, exclude: Sequence[str] = ()) -> Config:
    """The configuration `lint()`, `watch()` and `check()` work under, as the commands do: the
    `[tool.torchdoctor]` of `config`, or of the nearest pyproject.toml above the working
    directory, with `select` / `ignore` / `exclude` as the command line's options."""
    settings = load(Path(config) if config is not None else None, start=Path.cwd())
    return settings.with_overrides(select=list(select or []), ignore=list(ignore or []), exclude=list(exclude))


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{where}: expected a list of strings")
    return tuple(value)
