"""The rule-writing API: everything a lint check needs, in one import.

```python
import ast
from torchdoctor.linter.api import Context, lint_check
from torchdoctor.rules.mode.functional_dropout_ignores_eval import RULE as FUNCTIONAL_DROPOUT_IGNORES_EVAL

@lint_check(FUNCTIONAL_DROPOUT_IGNORES_EVAL, ast.Call, names={"dropout", "dropout1d", "dropout2d"})
def functional_dropout_ignores_eval(node: ast.Call, ctx: Context) -> None:
    if ctx.qualified(node.func) in DROPOUTS and ctx.class_info and ctx.class_info.is_module:
        ...
        ctx.report(FUNCTIONAL_DROPOUT_IGNORES_EVAL, node, call=ctx.text(node.func))
```

See docs/lint-rules-dev.md for the whole guide.
"""

from __future__ import annotations

import warnings
from typing import Any

from torchdoctor.core.finding import Edit, Fix, Severity
from torchdoctor.linter.context import Context
from torchdoctor.linter.engine import FILE_END, lint_check
from torchdoctor.linter.flow import kind_of, looks_like_loader, looks_like_optimizer
from torchdoctor.linter.model import ClassInfo, Event, Kind, LoopInfo, Scope
from torchdoctor.linter.names import UNKNOWN, argument, dotted, keyword, literal, may_pass, terminal

__all__ = [
    "FILE_END", "UNKNOWN", "ClassInfo", "Context", "Edit", "Event", "Fix", "Kind", "LoopInfo", "Scope", "Severity",
    "argument", "dotted", "keyword", "kind_of", "literal", "looks_like_loader", "looks_like_optimizer",
    "lint_check", "may_pass", "terminal",
]


def __getattr__(name: str) -> Any:
    """`check`, the decorator's name until it was renamed `lint_check` (so that "check" names only
    `torchdoctor check`): still works, with a DeprecationWarning, for one minor release."""
    if name == "check":
        warnings.warn("torchdoctor.linter.api.check is now lint_check", DeprecationWarning, stacklevel=2)
        return lint_check
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
