"""torchdoctor: finds what is wrong with PyTorch training code, and says where, why and how to fix it.

`import torchdoctor` does not import torch; `check` and `watch` do, when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torchdoctor._version import __version__
from torchdoctor.core.finding import Category, Finding, Severity
from torchdoctor.core.report import Report

if TYPE_CHECKING:
    from torchdoctor.health.api import check
    from torchdoctor.run.watch import watch

__all__ = ["Category", "Finding", "Report", "Severity", "__version__", "check", "watch"]

_LAZY = {"check": ("torchdoctor.health.api", "check"), "watch": ("torchdoctor.run.watch", "watch")}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'torchdoctor' has no attribute {name!r}")
