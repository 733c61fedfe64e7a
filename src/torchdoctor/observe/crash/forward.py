""""Module [Net] is missing the required "forward" function": the method that was meant to be
`forward` (a misspelt name among the class's own methods), or a `def forward` indented inside
another method, read from the class's source."""

from __future__ import annotations

import ast
import difflib
import inspect
from typing import TYPE_CHECKING

from torchdoctor.introspect.source import module_tree
from torchdoctor.observe.crash.describe import torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.rules.api.forward_not_defined import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_MESSAGE = 'is missing the required "forward" function'
#: how close a method's name must be to `forward` (difflib's ratio): `foward`, `forwad`, `Forward`
CLOSE = 0.8


def forward_not_defined(crash: Crash, session: Holdings | None) -> Explanation | None:
    torch = torch_module()
    if torch is None or crash.exc_type != "NotImplementedError" or _MESSAGE not in crash.message:
        return None
    module = next((f.locals.get("self") for f in reversed(crash.frames) if f.function == "_forward_unimplemented"), None)
    if not isinstance(module, torch.nn.Module):
        return None
    cls = type(module)
    node = _class_node(cls)
    if node is None:
        return None
    methods = [item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
    close = [m for m in methods if difflib.SequenceMatcher(None, m.name.lower(), "forward").ratio() >= CLOSE]
    if len(close) == 1:
        return Explanation(RULE, {"cls": cls.__name__, "method": close[0].name, "line": close[0].lineno})
    for method in methods:
        nested = next((n for n in ast.walk(method) if isinstance(n, ast.FunctionDef) and n.name == "forward" and n is not method), None)
        if nested is not None:
            return Explanation(RULE, {"cls": cls.__name__, "line": nested.lineno, "outer": method.name}, variant="nested")
    return None


def _class_node(cls: type) -> ast.ClassDef | None:
    """The class's definition in its file's syntax tree, found from the code of one of its own
    functions (None for a class with none, or without a source file)."""
    code = next((v.__code__ for v in vars(cls).values() if inspect.isfunction(v)), None)
    tree = module_tree(code.co_filename) if code is not None else None
    if tree is None or code is None:
        return None
    line = code.co_firstlineno
    return next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls.__name__
                 and n.lineno <= line <= (n.end_lineno or n.lineno)), None)


ORDER = 64
EXPLAINERS = (forward_not_defined,)
