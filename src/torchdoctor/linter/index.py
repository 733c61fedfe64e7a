"""Whole-tree facts for FILE_END checks: every node of a type, and every node's parent.

A check that must look at the whole file (every optimizer built in it, every use of a name)
asks here instead of walking the tree itself: the first question walks the tree once and the
answer is kept in `ctx.memo` for the other checks of the same file. Files whose checks never
ask (most files, once their cheap pre-tests fail) pay nothing. Nodes come in `ast.walk` order
(breadth first), so what a check finds first is what it found with its own `ast.walk`.
"""

from __future__ import annotations

import ast
from collections import deque
from dataclasses import dataclass, field
from typing import TypeVar

from torchdoctor.linter.context import FIELDS, Context

N = TypeVar("N", bound=ast.AST)


@dataclass
class TreeIndex:
    """The nodes of one tree by class, in `ast.walk` order, and the parent of each
    (`Load`/`Store` contexts are left out: no check asks for them)."""

    nodes: list[ast.AST] = field(default_factory=list)
    by_class: dict[type, list[ast.AST]] = field(default_factory=dict)
    parents: dict[int, ast.AST] = field(default_factory=dict)

    def of(self, cls: type[N]) -> list[N]:
        """Every node of exactly class `cls`, in `ast.walk` order."""
        return self.by_class.get(cls, [])  # type: ignore[return-value]

    def of_any(self, *classes: type) -> list[ast.AST]:
        """Every node of one of `classes`, in `ast.walk` order (mixed as the walk meets them)."""
        present = [cls for cls in classes if cls in self.by_class]
        if len(present) == 1:
            return self.by_class[present[0]]
        wanted = frozenset(present)
        return [node for node in self.nodes if node.__class__ in wanted] if wanted else []


def tree_index(tree: ast.AST, ctx: Context) -> TreeIndex:
    """The index of `tree` (the file's module), built on the first call for this file."""
    index: TreeIndex | None = ctx.memo.get("tree-index")
    if index is None:
        index = ctx.memo["tree-index"] = _build(tree)
    return index


def _build(tree: ast.AST) -> TreeIndex:
    index = TreeIndex()
    by_class, parents = index.by_class, index.parents
    walked = index.nodes.append
    todo = deque([tree])
    pop, push = todo.popleft, todo.append
    while todo:
        node = pop()
        walked(node)
        cls = node.__class__
        nodes = by_class.get(cls)
        if nodes is None:
            nodes = by_class[cls] = []
        nodes.append(node)
        for name, _ in FIELDS[cls]:
            value = getattr(node, name, None)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        parents[id(item)] = node
                        push(item)
            elif isinstance(value, ast.AST):
                parents[id(value)] = node
                push(value)
    return index
