"""torchdoctor: finds what is wrong with PyTorch training code, and says where, why and how to fix it.

`import torchdoctor` does not import torch; `check` and `watch` do, when first used (`lint` never does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torchdoctor._version import __version__
from torchdoctor.core.finding import Category, Finding, Severity
from torchdoctor.core.report import Report

if TYPE_CHECKING:
    from torchdoctor.health.api import check
    from torchdoctor.linter.python_api import lint
    from torchdoctor.observe.watch import watch

__all__ = ["Category", "Finding", "Report", "Severity", "__version__", "check", "lint", "watch"]

#: name -> (module, attribute): imported when first used
_LAZY = {"check": ("torchdoctor.health.api", "check"), "lint": ("torchdoctor.linter.python_api", "lint"),
         "watch": ("torchdoctor.observe.watch", "watch")}


def _text(report: Report) -> str:
    """The text report, as the command prints it (without colours): `print(report)` shows it.

    Wired here, in the package that puts the API together, so that core (the report's data)
    never imports a renderer: the renderers import core, not the other way round."""
    import io

    from torchdoctor.renderers.text import write

    stream = io.StringIO()
    write(report, stream, color=False)
    return stream.getvalue().rstrip("\n")  # print() adds the last newline


Report.__str__ = _text  # type: ignore[method-assign,assignment]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'torchdoctor' has no attribute {name!r}")
