"""How torchdoctor finds its units: the built-in ones and those another package ships.

Every family of units is an entry-point group. A plugin's entry point names a module (or a
package, walked), read exactly as the built-in modules of the family's package are:

| group               | built-in package            | what a module offers                       |
| ------------------- | --------------------------- | ------------------------------------------ |
| `torchdoctor.rules` | `torchdoctor.rules`         | `RULE`, a `Rule`                           |
| `torchdoctor.lint`  | `torchdoctor.lint.checks`   | `@check` functions (registered on import)  |
| `torchdoctor.run`   | `torchdoctor.run.detectors` | `Detector` subclasses                      |
| `torchdoctor.crash` | `torchdoctor.run.crash`     | `EXPLAINERS`, crash explainers             |
| `torchdoctor.check` | `torchdoctor.health.checks` | `NAME`, `TITLE`, `RULES`, `run(ctx)`       |

Where order matters (run detectors, crash explainers, health checks) the unit declares it:
`ORDER`, lower first; ties keep the order found (built-in modules by name, then plugins by
entry-point name). See CONTRIBUTING.md, "Plugins".
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
from collections.abc import Iterable
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, TypeVar

#: entry-point group -> the package of the built-in units
GROUPS: dict[str, str] = {
    "torchdoctor.rules": "torchdoctor.rules",
    "torchdoctor.lint": "torchdoctor.lint.checks",
    "torchdoctor.run": "torchdoctor.run.detectors",
    "torchdoctor.crash": "torchdoctor.run.crash",
    "torchdoctor.check": "torchdoctor.health.checks",
}
#: the place of a unit that declares no `ORDER`: after every built-in one that does
DEFAULT_ORDER = 1000

T = TypeVar("T")


class PluginError(RuntimeError):
    """A plugin's entry point could not be loaded."""


def modules(group: str) -> list[ModuleType]:
    """The modules of `group`: the built-in package's, then every plugin's (imported)."""
    found = walk(importlib.import_module(GROUPS[group]))
    for point in sorted(_entry_points(tuple(sys.path)).select(group=group), key=lambda point: point.name):
        try:
            loaded = point.load()
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
