"""A holder in the user's terms: what it is, where the code creates it and where it fills it.

`history` (a list created at train.py:31, appended at train.py:58); `model.attention.maps` (a
list attribute appended at model.py:25); the closure variable `outputs` of `hook()`. The lines
come from the source of the user's files (the file of the frame the holder was found in first,
then the other user files loaded), matched by the holder's last name.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from torchdoctor.core.locate import display_path, is_user_file
from torchdoctor.introspect.source import module_tree
from torchdoctor.observe.events import Location
from torchdoctor.observe.memory import paths
from torchdoctor.observe.memory.paths import Path

#: calls that put something into a collection
FILLING = frozenset({"append", "extend", "insert", "add", "appendleft", "extendleft", "setdefault", "update", "put"})
#: what creates a collection
MAKERS = frozenset({"list", "dict", "set", "deque", "defaultdict", "OrderedDict", "Counter"})
KIND_WORDS = {"list": "a list", "dict": "a dict", "deque": "a deque", "set": "a set", "tuple": "a tuple",
              "OrderedDict": "a dict", "defaultdict": "a dict"}


@dataclass(frozen=True)
class Sites:
    """Where a holder is created and where it is filled (or rebound), when the source says."""

    created: Location | None
    filled: Location | None


def last_name(path: Path) -> str | None:
    """The name the code uses for the holder: `history`, `maps` (of `model.attention.maps`)."""
    for step in reversed(path):
        if step.kind in (paths.LOCAL, paths.GLOBAL, paths.ATTR, paths.CLOSURE, paths.FRAME_LOCAL):
            return step.text
    return None


def user_files(first: Iterable[str] = ()) -> list[str]:
    """The user's source files loaded in this process (`first` ones first): where to look for
    the line that makes or fills something."""
    others = [getattr(m, "__file__", None) or "" for m in list(sys.modules.values())]
    seen: list[str] = []
    for filename in [*first, *others]:
        if filename and filename.endswith(".py") and filename not in seen and is_user_file(filename):
            seen.append(filename)
    return seen


def user_trees(first: Iterable[str] = ()) -> Iterator[tuple[str, ast.Module]]:
    """(file, syntax tree) of each of `user_files(first)` that parses."""
    for filename in user_files(first):
        tree = module_tree(filename)
        if tree is not None:
            yield filename, tree


def _files(path: Path) -> list[str]:
    """The user's files to search: the holder's own first, then every user module loaded."""
    return user_files(step.where[0] for step in path if step.where is not None)


def sites(path: Path, rebinding: bool = False) -> Sites:
    """Where the holder is created and filled. With `rebinding`, the `filled` site is where the
    name is rebound from itself (`context = 0.9 * context + ...`): a tensor carried across steps."""
    name = last_name(path)
    if name is None:
        return Sites(None, None)
    created: Location | None = None
    filled: Location | None = None
    for filename in _files(path):
        tree = module_tree(filename)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if created is None and _creates(node, name):
                created = (filename, node.lineno)  # type: ignore[attr-defined]
            if filled is None and (_rebinds(node, name) if rebinding else _fills(node, name)):
                filled = (filename, node.lineno)  # type: ignore[attr-defined]
        if created is not None or filled is not None:
            break  # the file that has it: the first place the user looks
    return Sites(created, filled)


def _terminal(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _fills(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FILLING:
        return _terminal(node.func.value) == name
    if isinstance(node, (ast.Assign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, ast.Subscript) and _terminal(t.value) == name for t in targets)
    return False


def _creates(node: ast.AST, name: str) -> bool:
    if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
        return False
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if not any(_terminal(t) == name for t in targets):
        return False
    value = node.value
    if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    return isinstance(value, ast.Call) and _terminal(value.func) in MAKERS


def _rebinds(node: ast.AST, name: str) -> bool:
    """`name = f(name, ...)`: the new value is made from the old one."""
    if not isinstance(node, ast.Assign) or not any(_terminal(t) == name for t in node.targets):
        return False
    return any(_terminal(n) == name for n in ast.walk(node.value) if isinstance(n, (ast.Name, ast.Attribute)))


def describe(path: Path, kind: str, found: Sites) -> str:
    """`` `history` (a list created at train.py:31, appended at train.py:58) ``; a closure
    variable with the hook it belongs to; a carried tensor with the line that rebinds it."""
    name = paths.render(path)
    what = KIND_WORDS.get(kind, "")
    closure = next((i for i in range(len(path) - 1, -1, -1) if path[i].kind == paths.CLOSURE), None)
    if closure is not None:
        step = path[closure]
        function = step.where[2] if step.where is not None else "a function"
        hook = next((s for s in reversed(path[:closure]) if s.kind == paths.HOOK), None)
        owner = paths.render(tuple(s for s in path[:closure] if s.kind != paths.HOOK))
        name = paths.render((paths.Step(paths.LOCAL, step.text), *path[closure + 1:]))
        where = f"in the closure of `{function}()`"
        if hook is not None and owner:
            where += f", {_article(hook.text.split(' `')[0])} on `{owner}`"
        closure_text = where
    else:
        closure_text = ""
    if closure is None and path and path[-1].kind == paths.ATTR and what:
        what = f"{what} attribute"
    tail = []
    if found.created is not None:
        tail.append(f"created at {_place(found.created)}")
    if found.filled is not None:
        verb = "rebound from itself" if not kind else "filled" if kind == "dict" else "appended"
        tail.append(f"{verb} at {_place(found.filled)}")
    if closure_text:
        tail.append(closure_text)
    inner = " ".join(part for part in (what, ", ".join(tail)) if part)
    return f"`{name}` ({inner})" if inner else f"`{name}`"


def _article(text: str) -> str:
    return f"an {text}" if text[:1] in "aeiou" else f"a {text}"


def _place(location: Location) -> str:
    return f"{display_path(location[0])}:{location[1]}"
