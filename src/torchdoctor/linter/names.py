"""Names as PyTorch knows them: imports resolved to qualified names, arguments bound.

`import torch.nn as nn` makes `nn.CrossEntropyLoss` mean `torch.nn.CrossEntropyLoss`;
`from torch.nn import functional as F` makes `F.softmax` mean `torch.nn.functional.softmax`.
Rules compare qualified names, never spellings, so every alias works the same.
"""

from __future__ import annotations

import ast
import functools
import re

#: long import paths that mean the same public name (`torch.nn.modules.loss.X` is `torch.nn.X`)
_CANONICAL_PREFIXES = (
    ("torch.nn.modules.", "torch.nn.", 1),
    ("torch.optim.lr_scheduler.", None, 0),
    ("torch.optim.", "torch.optim.", 1),
    ("torch.utils.data.dataloader.", "torch.utils.data.", 0),
    ("torch.utils.data.dataset.", "torch.utils.data.", 0),
    ("torch.utils.data.sampler.", "torch.utils.data.", 0),
    ("torch.nn.parameter.", "torch.nn.", 0),
    ("torch.cuda.amp.grad_scaler.", "torch.cuda.amp.", 0),
    ("torch.amp.grad_scaler.", "torch.amp.", 0),
    ("pytorch_lightning.", "lightning.pytorch.", 0),
)

#: modules whose import marks a file as PyTorch code (for the cheap pre-filter)
TORCH_ROOTS = frozenset({"torch", "torchvision", "torchaudio", "torchtext", "lightning", "pytorch_lightning",
                         "lightning_fabric", "timm", "diffusers", "transformers", "accelerate", "functorch"})


@functools.lru_cache(maxsize=8192)
def canonical(name: str) -> str:
    """`torch.nn.modules.loss.CrossEntropyLoss` -> `torch.nn.CrossEntropyLoss`, and the like.

    `skip` is how many module components after the prefix are dropped (the submodule file).
    """
    for prefix, replacement, skip in _CANONICAL_PREFIXES:
        if name.startswith(prefix):
            if replacement is None:
                return name
            rest = name[len(prefix):].split(".")
            if skip and len(rest) > skip:
                rest = rest[skip:]
            return replacement + ".".join(rest)
    return name


class ImportTable:
    """Local name -> qualified name, from every `import` seen so far in the file."""

    __slots__ = ("names", "torch", "star", "_chains")

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.torch = False  # the file imports torch (or a library built on it)
        self.star = False  # `from x import *`: names the file never imports may come from there
        #: attribute chains resolved since the last import (many checks ask about the same callee);
        #: keyed by the node itself, which the table then keeps alive, so its id is never reused
        self._chains: dict[ast.Attribute, str | None] = {}

    def add(self, node: ast.Import | ast.ImportFrom) -> None:
        self._chains.clear()  # what a chain means may change with this import
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.partition(".")[0]
                if alias.asname:
                    self.names[alias.asname] = canonical(alias.name)
                else:
                    self.names[root] = root
                self.torch = self.torch or root in TORCH_ROOTS
            return
        module = node.module or ""
        if node.level:
            module = "." * node.level + module
        elif module.partition(".")[0] in TORCH_ROOTS:
            self.torch = True
        for alias in node.names:
            if alias.name == "*":
                self.star = True
                continue
            local = alias.asname or alias.name
            joined = f"{module}{alias.name}" if module.endswith(".") else f"{module}.{alias.name}"
            self.names[local] = canonical(joined if module else alias.name)

    def resolve(self, node: ast.expr) -> str | None:
        """The qualified name of a `Name` or dotted `Attribute` chain, or None if not imported."""
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Attribute):
            if node in self._chains:
                return self._chains[node]
            resolved = self._chains[node] = self._resolve_chain(node)
            return resolved
        return None

    def _resolve_chain(self, node: ast.Attribute) -> str | None:
        """`torch.nn.functional.softmax` for `F.softmax`: the chain's root name resolved."""
        parts = [node.attr]
        value = node.value
        while isinstance(value, ast.Attribute):
            parts.append(value.attr)
            value = value.value
        if not isinstance(value, ast.Name):
            return None
        root = self.names.get(value.id)
        if root is None:
            if not (self.star and value.id == "torch"):
                return None
            root = "torch"  # `from utils import *` where utils imports torch: `torch.no_grad()`
        parts.append(root)
        parts.reverse()
        return canonical(".".join(parts))


def dotted(node: ast.expr) -> str | None:
    """`self.model.fc` for a chain of plain attribute accesses on a name, else None.

    Used to say "the same object" across lines without type inference.
    """
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    parts.reverse()
    return ".".join(parts)


def chain_root(node: ast.expr, through: frozenset[str]) -> str | None:
    """`dotted` of the object behind calls that return it: `model` for `model.to(device)` when
    `to` is in `through` (so `model.to(device).train()` is a call on `model`)."""
    while (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
           and node.func.attr in through):
        node = node.func.value
    return dotted(node)


def terminal(node: ast.expr) -> str | None:
    """The last name of a callee: `step` for `opt.step`, `softmax` for `F.softmax`."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def assignments_by_name(scope: ast.AST) -> dict[str, list[ast.Assign | ast.AnnAssign]]:
    """The plain assignments anywhere in `scope`, by the name they assign (`name = ...`, `a =
    name = ...`, `name: T = ...` with a value), each name's in `ast.walk` order."""
    found: dict[str, list[ast.Assign | ast.AnnAssign]] = {}
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            for name in dict.fromkeys(t.id for t in node.targets if isinstance(t, ast.Name)):
                found.setdefault(name, []).append(node)
        elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
            found.setdefault(node.target.id, []).append(node)
    return found


def mentions(node: ast.AST, names: set[str] | frozenset[str]) -> bool:
    """Some plain name of `names` appears anywhere in `node` (`a + b * 2` mentions `b`)."""
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def spells(tree: ast.AST, pattern: re.Pattern[str]) -> bool:
    """Some name, attribute, imported name or keyword argument in `tree` matches `pattern`: what
    the code names, never what a comment or a string says (`# add_safe_globals(...)` is no call).
    For a check that a cheap text search has already found the word somewhere in the file."""
    for node in ast.walk(tree):
        cls = node.__class__
        word = (node.id if cls is ast.Name else node.attr if cls is ast.Attribute  # type: ignore[attr-defined]
                else node.name if cls is ast.alias else node.arg if cls is ast.keyword else None)  # type: ignore[attr-defined]
        if word and pattern.search(word):
            return True
    return False


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def argument(call: ast.Call, name: str, position: int | None = None) -> ast.expr | None:
    """The expression bound to parameter `name`, given by keyword or at `position` (0-based).

    None when absent *or* when it cannot be known (see `may_pass`): a `*args` before the
    position hides which positional argument lands there.
    """
    value = keyword(call, name)
    if value is not None or position is None:
        return value
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None
        if index == position:
            return arg
    return None


def may_pass(call: ast.Call, name: str, position: int | None = None) -> bool:
    """True when `name` is passed, or might be, through `**kwargs` or `*args`.

    Rules about a *missing* argument must use this: unknown is never missing.
    """
    if argument(call, name, position) is not None:
        return True
    if any(kw.arg is None for kw in call.keywords):
        return True
    if position is not None and any(isinstance(arg, ast.Starred) for arg in call.args[: position + 1]):
        return True
    return False


def literal(node: ast.expr | None) -> object:
    """The value of a literal constant (with unary minus), else the `UNKNOWN` sentinel."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = node.operand.value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value
    return UNKNOWN


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()
