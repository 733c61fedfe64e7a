"""How torchdoctor finds its units: the built-in ones and those another package ships.

Every family of units is an entry-point group. A plugin's entry point names a module (or a
package, walked), read exactly as the built-in modules of the family's package are:

| group               | built-in package            | what a module offers                       |
| ------------------- | --------------------------- | ------------------------------------------ |
| `torchdoctor.rules` | `torchdoctor.rules`         | `RULE`, a `Rule`                           |
| `torchdoctor.lint`  | `torchdoctor.linter.checks`   | `@lint_check` functions (registered on import)  |
| `torchdoctor.run`   | `torchdoctor.observe.detectors` | `Detector` subclasses                      |
| `torchdoctor.crash` | `torchdoctor.observe.crash`     | `EXPLAINERS`, crash explainers             |
| `torchdoctor.check` | `torchdoctor.health.checks` | `NAME`, `TITLE`, `RULES`, `run(ctx)`       |

Where order matters (run detectors, crash explainers, health checks) the unit declares it:
`ORDER`, lower first; ties keep the order found (built-in modules by name, then plugins by
entry-point name). See CONTRIBUTING.md, "Plugins".

Every unit is checked against its family's contract when it is loaded, so a malformed one
fails at once with a `PluginError` ("<module>: <what is wrong>") instead of never being
called: the module-level units (`RULE`, `EXPLAINERS`, a health check's parts) here, as
`modules` finds them; `Detector` subclasses when the class is defined
(`Detector.__init_subclass__`) and `@lint_check` functions when they are decorated (linter/engine.py).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import sys
from collections.abc import Callable, Iterable
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, TypeVar

from torchdoctor.core.rule import CODE_PATTERN, Rule

#: entry-point group -> the package of the built-in units
GROUPS: dict[str, str] = {
    "torchdoctor.rules": "torchdoctor.rules",
    "torchdoctor.lint": "torchdoctor.linter.checks",
    "torchdoctor.run": "torchdoctor.observe.detectors",
    "torchdoctor.crash": "torchdoctor.observe.crash",
    "torchdoctor.check": "torchdoctor.health.checks",
}
#: the place of a unit that declares no `ORDER`: after every built-in one that does
DEFAULT_ORDER = 1000

T = TypeVar("T")


class PluginError(RuntimeError):
    """A unit that cannot be used, built-in or a plugin's: its entry point failed to load, or it
    breaks its family's contract (the message names the module at fault)."""


def modules(group: str) -> list[ModuleType]:
    """The modules of `group`: the built-in package's, then every plugin's (imported), each
    checked against the family's contract."""
    found = walk(importlib.import_module(GROUPS[group])) + _plugin_modules(group)
    _check(group, found)
    return found


def check_plugins(*groups: str) -> None:
    """Load and check the installed plugins of `groups` now (not the built-in units): `run` loads
    its detectors and explainers in the script's processes, where a malformed plugin could only
    be noted; the runner says it before the script starts, as every other command does. Costs
    nothing when no plugin of `groups` is installed (no import)."""
    for group in groups:
        _check(group, _plugin_modules(group))


def _check(group: str, found: list[ModuleType]) -> None:
    """Each module against its family's contract, then the family's modules together (a name two
    health checks share)."""
    contract = CONTRACTS.get(group)
    if contract is not None:
        for module in found:
            contract(module)
    together = FAMILY_CONTRACTS.get(group)
    if together is not None:
        together(found)


def _plugin_modules(group: str) -> list[ModuleType]:
    """The modules of every installed plugin of `group`, imported and walked."""
    found: list[ModuleType] = []
    for point in sorted(_entry_points(tuple(sys.path)).select(group=group), key=lambda point: point.name):
        try:
            loaded = point.load()
        except PluginError:  # a unit of it broke its contract as it was defined: the error names it
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of a third party's import is its plugin's
            raise PluginError(f"the {group} plugin {point.name!r} ({point.value}) failed to load: {exc!r}") from exc
        if not isinstance(loaded, ModuleType):
            raise PluginError(f"the {group} plugin {point.name!r} names {point.value}, not a module")
        found += walk(loaded)
    return found


@functools.lru_cache(maxsize=1)
def _entry_points(path: tuple[str, ...]) -> Any:  # EntryPoints; SelectableGroups before Python 3.12
    """Every installed distribution's entry points, read once for the families a process looks up
    (`run` reads two in every observed process: each read opens every distribution's metadata);
    read again when `sys.path`, where the distributions are found, changed."""
    return entry_points()


def walk(module: ModuleType) -> list[ModuleType]:
    """`module` and, for a package, every module under it (by name)."""
    found = [module]
    path = getattr(module, "__path__", None)
    if path is not None:
        found += [importlib.import_module(info.name) for info in pkgutil.walk_packages(path, module.__name__ + ".")]
    return found


def ordered(units: Iterable[T]) -> list[T]:
    """`units` by their declared `ORDER` (stable: ties keep the order found)."""
    return sorted(units, key=lambda unit: getattr(unit, "ORDER", DEFAULT_ORDER))


def call_problem(func: object, arguments: int) -> str | None:
    """Why `func` cannot be called with `arguments` positional arguments, the way its family
    calls it (None when it can): said when the unit is loaded, not at its first call mid-run."""
    if not callable(func):
        return f"is a {type(func).__name__}, not a function"
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # no signature to read (some builtins): trust it
        return None
    try:
        signature.bind(*range(arguments))
    except TypeError:
        return f"takes {signature}"
    return None


def _rule_module(module: ModuleType) -> None:
    """A `RULE` that is not a Rule would be left out of the catalogue without a word."""
    if hasattr(module, "RULE") and not isinstance(module.RULE, Rule):
        raise PluginError(f"{module.__name__}: RULE is a {type(module.RULE).__name__}, not a Rule")


def _crash_module(module: ModuleType) -> None:
    """An explainer that cannot be called fails only when a script crashes, and then silently
    (explain.py takes a failed explanation for no explanation)."""
    explainers = getattr(module, "EXPLAINERS", ())
    if not isinstance(explainers, (tuple, list)):
        raise PluginError(f"{module.__name__}: EXPLAINERS is a {type(explainers).__name__}, not a tuple of "
                          "explainers (functions (crash, observed) -> Explanation | None)")
    for explainer in explainers:
        problem = call_problem(explainer, 2)
        if problem:
            name = getattr(explainer, "__qualname__", repr(explainer))
            raise PluginError(f"{module.__name__}: the explainer {name} in EXPLAINERS {problem}; "
                              "an explainer is called as explainer(crash, observed)")


#: what a health check module defines: all of them, or none (a helper module, a package's `__init__`)
CHECK_PARTS = ("NAME", "TITLE", "RULES", "run")


def _check_module(module: ModuleType) -> None:
    """A module with some of a health check's parts is one that lost the others: the runner
    would leave it out, or fail on it in the middle of `torchdoctor check`."""
    missing = [part for part in CHECK_PARTS if not hasattr(module, part)]
    if len(missing) == len(CHECK_PARTS):
        return
    if missing:
        problem: str | None = f"a health check defines NAME, TITLE, RULES and run(ctx); it lacks {', '.join(missing)}"
    else:
        problem = (_text_problem(module, "NAME") or _text_problem(module, "TITLE") or _codes_problem(module.RULES)
                   or _run_problem(module.run))
    if problem:
        raise PluginError(f"{module.__name__}: {problem}")


def _text_problem(module: ModuleType, part: str) -> str | None:
    """NAME is what `--skip` names, TITLE the report's line: both are shown as text."""
    value = getattr(module, part)
    return None if isinstance(value, str) and value else f"{part} is {value!r}, not a non-empty string"


def _codes_problem(rules: object) -> str | None:
    """RULES holds codes, not Rules: the report matches them against its findings' codes; and
    codes of rules that exist (a mistyped one would never match a finding)."""
    if not isinstance(rules, tuple):
        return f"RULES is a {type(rules).__name__}, not a tuple of rule codes such as (RULE.code,)"
    for item in rules:
        if isinstance(item, Rule):
            return f"RULES holds the Rule {item.code} itself, not its code (RULE.code)"
        if not isinstance(item, str) or not CODE_PATTERN.match(item):
            return f"RULES holds {item!r}, not a rule code ('TD' and 3 digits, RULE.code)"
    known = _rule_codes()
    if unknown := [code for code in rules if code not in known]:
        return f"RULES names {', '.join(unknown)}, which no rule has (`torchdoctor rules` lists the codes)"
    return None


def rules() -> list[Rule]:
    """The `RULE` of every rule module, built-in and plugins', as found: core/registry.py orders
    and indexes them; a health check's RULES are checked against their codes here (the registry
    builds on this module, so it cannot be asked)."""
    return [rule for module in modules("torchdoctor.rules") if isinstance(rule := getattr(module, "RULE", None), Rule)]


@functools.lru_cache(maxsize=1)
def _rule_codes() -> frozenset[str]:
    return frozenset(rule.code for rule in rules())


def _run_problem(run: object) -> str | None:
    problem = call_problem(run, 1)
    return f"run {problem}; a health check is called as run(ctx)" if problem else None


def _check_names(modules: list[ModuleType]) -> None:
    """NAME is what `--skip` names and what the report keys a check's outcome by: a second check
    with the same NAME would be skipped with the first, and its outcome taken for the first's."""
    seen: dict[str, str] = {}
    for module in modules:
        name = getattr(module, "NAME", None)
        if not all(hasattr(module, part) for part in CHECK_PARTS) or not isinstance(name, str):
            continue
        if name in seen:
            raise PluginError(f"{module.__name__}: NAME {name!r} is the NAME of {seen[name]} already; "
                              "each health check has its own")
        seen[name] = module.__name__


#: entry-point group -> the check of its modules' contract (lint checks and run detectors are
#: checked where they are defined: see the module doc)
CONTRACTS: dict[str, Callable[[ModuleType], None]] = {
    "torchdoctor.rules": _rule_module,
    "torchdoctor.crash": _crash_module,
    "torchdoctor.check": _check_module,
}
#: entry-point group -> the check of what its modules must not share (run on all of them at once)
FAMILY_CONTRACTS: dict[str, Callable[[list[ModuleType]], None]] = {
    "torchdoctor.check": _check_names,
}
