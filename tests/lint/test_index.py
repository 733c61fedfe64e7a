"""The whole-tree index that FILE_END checks share (linter/index.py): nodes by class in the order
`ast.walk` gives them, each node's parent, built once per file."""

from __future__ import annotations

import ast
from pathlib import Path

from torchdoctor.linter.context import Context
from torchdoctor.linter.index import tree_index
from torchdoctor.linter.source import Source

SOURCE = Path(__file__).parent.joinpath("clean", "gpt_trainer.py").read_text()


def _context() -> Context:
    return Context(Source("gpt.py", SOURCE), frozenset(), {}, {}, frozenset())


def test_nodes_come_in_walk_order_with_their_parents() -> None:
    tree = ast.parse(SOURCE)
    index = tree_index(tree, _context())
    walked = [n for n in ast.walk(tree) if not isinstance(n, ast.expr_context)]
    assert index.nodes == walked
    for cls in (ast.Call, ast.Name, ast.Assign, ast.ClassDef):
        assert index.of(cls) == [n for n in walked if n.__class__ is cls]
    mixed = index.of_any(ast.Assign, ast.AugAssign, ast.AnnAssign)
    assert mixed == [n for n in walked if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))]
    shared = (ast.expr_context, ast.operator, ast.cmpop, ast.boolop, ast.unaryop)  # one object for every `+`
    for parent in walked:
        for child in ast.iter_child_nodes(parent):
            if not isinstance(child, shared):
                assert index.parents[id(child)] is parent


def test_built_once_per_file() -> None:
    tree = ast.parse(SOURCE)
    ctx = _context()
    assert tree_index(tree, ctx) is tree_index(tree, ctx)
