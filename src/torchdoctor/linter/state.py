"""Where the lint walk is in one file: what rules (and `flow`) read while it happens.

`Context` (context.py) walks the tree and keeps this state up to date; rules read it through
their `ctx`. Nothing here walks or reports, so `flow` can type against it without a circle.
"""

from __future__ import annotations

import ast
from typing import Any

from torchdoctor.linter.model import ClassInfo, Kind, Scope
from torchdoctor.linter.names import ImportTable, assignments_by_name
from torchdoctor.linter.source import Source

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class WalkState:
    """The state of the walk over one file, read-only for rules.

    `source`, `imports`, `scope` (the current function, or the module), `class_info` (the
    enclosing class), `loops` (enclosing loops of the current scope, outermost first),
    `grad_disabled`, `conditions` (enclosing `if`s whose body we are in), `parent` (the node
    whose child is being visited), `statement` (the innermost statement), `classes`, `scopes`.
    """

    def __init__(self, source: Source) -> None:
        self.source = source
        self.imports = ImportTable()
        self.memo: dict[str, Any] = {}  # per-file scratch space for checks, keyed by the check's name
        self.classes: dict[str, ClassInfo] = {}
        self.functions: dict[str, Scope] = {}  # module-level functions by name (for what they return)
        self.methods: dict[tuple[int, str], Scope] = {}  # (id of the ClassInfo, name) -> the method seen so far
        self.module_scope = Scope(node=ast.Module(body=[], type_ignores=[]), name="<module>")
        self.scope = self.module_scope
        self.scopes: list[Scope] = [self.module_scope]
        self.class_info: ClassInfo | None = None
        self.loops: tuple[ast.AST, ...] = ()
        self.grad_disabled = False
        self.conditions: tuple[ast.If, ...] = ()
        self.parent: ast.AST | None = None
        self.statement: ast.stmt | None = None
        self._assignments: dict[int, dict[str, list[ast.Assign | ast.AnnAssign]]] = {}  # by id of the scope's node

    def qualified(self, node: ast.expr) -> str | None:
        """`torch.nn.functional.softmax` for `F.softmax` (imports resolved), else None."""
        return self.imports.resolve(node)

    def lookup(self, name: str) -> Kind | None:
        """The kind of a variable: the latest assignment in this function, else module level."""
        scope = self.scope
        bindings = scope.bindings
        if name in bindings:
            return bindings[name]
        if scope is not self.module_scope and name not in scope.params:
            return self.module_scope.bindings.get(name)
        return None

    def assignments(self, name: str) -> list[ast.Assign | ast.AnnAssign]:
        """The plain assignments to `name` anywhere in the current function (or the module), in
        `ast.walk` order. The scope is walked once for all its names (`assignments_by_name`),
        not once per question."""
        node = self.scope.node
        table = self._assignments.get(id(node))
        if table is None:
            table = self._assignments[id(node)] = assignments_by_name(node)
        return table.get(name, [])

    def text(self, node: ast.AST) -> str:
        """The node's source text."""
        return self.source.segment(node)

    @property
    def function(self) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        node = self.scope.node
        return node if isinstance(node, _FUNCTIONS) else None

    @property
    def in_forward(self) -> bool:
        """Inside the `forward` method of a class that is (or looks like) an nn.Module."""
        function = self.function
        info = self.class_info
        return (function is not None and function.name == "forward" and info is not None
                and self.scope.cls is info and (info.is_module or bool(info.bases)))

    def scopes_named(self, name: str, cls: ClassInfo | None = None) -> list[Scope]:
        """Functions of this file called `name` (methods of `cls` when given)."""
        if cls is not None:
            return [s for s in self.scopes if s.cls is cls and s.name.rpartition(".")[2] == name]
        return [s for s in self.scopes if s.name == name and s.cls is None]
