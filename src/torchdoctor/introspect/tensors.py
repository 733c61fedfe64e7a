"""The tensors inside nested batches and outputs (tuples, lists, dicts, named tuples)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def tensors_in(tree: Any) -> list[torch.Tensor]:
    """Every tensor in a nest of tuples, lists and dicts (and dataclass-like outputs)."""
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, (tuple, list)):
        return [t for item in tree for t in tensors_in(item)]
    if isinstance(tree, dict):
        return [t for item in tree.values() for t in tensors_in(item)]
    return []


def map_tree(tree: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    if isinstance(tree, torch.Tensor):
        return fn(tree)
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*(map_tree(item, fn) for item in tree))
    if isinstance(tree, (tuple, list)):
        return type(tree)(map_tree(item, fn) for item in tree)
    if isinstance(tree, dict):
        return {key: map_tree(value, fn) for key, value in tree.items()}
    return tree
