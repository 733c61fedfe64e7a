"""Walking an autograd graph: the nodes below a backward() call's roots."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any


def graph_nodes(roots: Iterable[Any], max_nodes: int = 100_000) -> Iterator[Any]:
    """Each node of the graph below `roots` once (depth first), at most `max_nodes` of them.

    The graph keeps its nodes alive while it is walked, so their ids are stable."""
    seen: set[int] = set()
    stack = [root for root in roots if root is not None]
    while stack and len(seen) < max_nodes:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(child for child, _ in getattr(node, "next_functions", ()) if child is not None)


def accumulators(roots: Iterable[Any], max_nodes: int = 100_000) -> Iterator[tuple[Any, Any]]:
    """(node, leaf tensor) for each gradient accumulator below `roots`: the node that adds a
    leaf's (a parameter's) gradient into its `.grad`."""
    for node in graph_nodes(roots, max_nodes):
        variable = getattr(node, "variable", None)
        if variable is not None:
            yield node, variable
