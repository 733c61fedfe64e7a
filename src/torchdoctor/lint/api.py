"""The rule-writing API: everything a lint check needs, in one import.

```python
import ast
from torchdoctor.lint.api import Context, check
from torchdoctor.rules.mode.functional_dropout_ignores_eval import RULE as FUNCTIONAL_DROPOUT_IGNORES_EVAL

@check(FUNCTIONAL_DROPOUT_IGNORES_EVAL, ast.Call, names={"dropout", "dropout1d", "dropout2d"})
def functional_dropout_ignores_eval(node: ast.Call, ctx: Context) -> None:
    if ctx.qualified(node.func) in DROPOUTS and ctx.class_info and ctx.class_info.is_module:
        ...
        ctx.report(FUNCTIONAL_DROPOUT_IGNORES_EVAL, node, call=ctx.text(node.func))
```

See docs/lint-rules-dev.md for the whole guide.
"""

from __future__ import annotations

from torchdoctor.core.finding import Edit, Fix, Severity
from torchdoctor.lint.context import Context
from torchdoctor.lint.engine import FILE_END, check
from torchdoctor.lint.flow import kind_of, looks_like_loader, looks_like_optimizer
from torchdoctor.lint.model import ClassInfo, Event, Kind, LoopInfo, Scope
from torchdoctor.lint.names import UNKNOWN, argument, dotted, keyword, literal, may_pass, terminal

__all__ = [
    "FILE_END", "UNKNOWN", "ClassInfo", "Context", "Edit", "Event", "Fix", "Kind", "LoopInfo", "Scope", "Severity",
    "argument", "check", "dotted", "keyword", "kind_of", "literal", "looks_like_loader", "looks_like_optimizer",
    "may_pass", "terminal",
]
