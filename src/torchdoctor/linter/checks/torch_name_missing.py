"""TD574: a name or keyword torch does not have, used as if it did.

Lint does not import torch: what exists comes from `linter/data/torch_api.json` (written from
real torch builds by `python -m torchdoctor.dev torch-api`; a name is missing only when every
torch of the table lacks it). The check runs once per file, over the calls the walk collected:
a callee or argument that is an attribute of a torch, torchvision or NumPy module, a
`from torch... import` of a name, a keyword a torch callable does not take, `torch.stft` without
`return_complex`. Code that guards the access (a `try` catching AttributeError or ImportError,
an `if` testing `hasattr` or a version) or assigns the name itself is left alone.
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib.metadata
import json
from pathlib import Path
from typing import Any

from torchdoctor.linter.api import FILE_END, Context, lint_check
from torchdoctor.linter.index import tree_index
from torchdoctor.rules.api.torch_name_missing import RULE

TABLE = Path(__file__).resolve().parents[1] / "data" / "torch_api.json"
#: NumPy's aliases of builtins, removed in NumPy 1.24 (`np.bool` and `np.long` came back in 2.0)
NUMPY_REMOVED = {"float": "float", "int": "int", "object": "object", "str": "str", "complex": "complex",
                 "unicode": "str"}
_GUARDS = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError", "TypeError", "RuntimeError",
                     "Exception", "BaseException"})


@functools.lru_cache(maxsize=1)
def api_table() -> dict[str, Any] | None:
    """The table's modules; None when the installed torch is not one of the table's releases (a
    newer one's new names would look missing, an older one may still have what was removed since)."""
    table = json.loads(TABLE.read_text())
    try:
        installed = _minor(importlib.metadata.version("torch"))
    except importlib.metadata.PackageNotFoundError:
        return None
    known = [_minor(v) for v in table["versions"]["torch"]]
    if not min(known) <= installed <= max(known):
        return None  # names and keywords come and go between releases: only the table's releases are judged
    modules: dict[str, Any] = table["modules"]
    return {name: (frozenset(entry["names"]), entry["signatures"]) for name, entry in modules.items()}


def _minor(version: str) -> tuple[int, int]:
    major, minor = (version.split("+")[0].split(".") + ["0"])[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


@lint_check(RULE, ast.ImportFrom)
def imported_name_missing(node: ast.ImportFrom, ctx: Context) -> None:
    """`from torchvision.transforms import HorizontalFlip`: kept for the file's end, where the
    tree's parents tell whether a `try` guards it."""
    table = api_table()
    if table is None or node.level or node.module not in table:
        return
    names = table[node.module][0]
    for alias in node.names:
        if alias.name != "*" and not alias.name.startswith("_") and alias.name not in names:
            fields = {"module": node.module, "name": alias.name, **_suggestion(alias.name, names)}
            ctx.memo.setdefault(RULE.code, []).append((node, fields, "import"))


@lint_check(RULE, FILE_END)
def torch_name_missing(tree: ast.Module, ctx: Context) -> None:
    table = api_table()
    if not any(target.partition(".")[0] in ("torch", "torchvision", "numpy") for target in ctx.imports.names.values()):
        return
    found: list[tuple[ast.AST, dict[str, Any], str | None]] = list(ctx.memo.get(RULE.code, []))
    for call in ctx.calls:
        for expr in (call.func, *call.args, *(k.value for k in call.keywords)):
            if isinstance(expr, ast.Attribute):
                missing = _missing_attribute(expr, ctx, table)
                if missing is not None:
                    found.append((expr, *missing))
        if table is not None:
            found += _call_problems(call, ctx, table)
    if not found:
        return
    index = tree_index(tree, ctx)
    reported: set[int] = set()
    for node, fields, variant in found:
        if _guarded(node, index.parents, ctx) or _assigned(fields.get("expr"), index, ctx) or _rebound(node, index):
            continue
        if variant == "functional":  # the line to change is the import of `torch.functional`
            node = _import_of(index.of(ast.Import), "torch.functional", fields["alias"]) or node
        if id(node) not in reported:
            reported.add(id(node))
            ctx.report(RULE, node, fields=fields, variant=variant)


def _missing_attribute(expr: ast.Attribute, ctx: Context, table: dict[str, Any] | None
                       ) -> tuple[dict[str, Any], str | None] | None:
    """`nn.Layernorm`, `F.softplus` of `torch.functional`, `np.float`: the fields of a finding."""
    qualified = ctx.qualified(expr)
    if qualified is None:
        return None
    module, _, name = qualified.rpartition(".")
    if ctx.qualified(expr.value) != module:
        return None  # `torch.nn.modules.loss.X` means `torch.nn.X` to lint: not what was written
    if module == "numpy" and name in NUMPY_REMOVED:
        return {"expr": ctx.text(expr), "builtin": NUMPY_REMOVED[name]}, "numpy-alias"
    if table is None or module not in table or name.startswith("_") or name in table[module][0]:
        return None
    fields = {"expr": ctx.text(expr), "module": module, "name": name}
    if module == "torch.functional" and name in table["torch.nn.functional"][0]:
        return {"expr": fields["expr"], "alias": ctx.text(expr.value), "name": name, "use_line": expr.lineno}, "functional"
    return fields | _suggestion(name, table[module][0]), None


def _call_problems(call: ast.Call, ctx: Context, table: dict[str, Any]) -> list[tuple[ast.AST, dict[str, Any], str]]:
    """A keyword the callee does not take; `torch.stft` without `return_complex`."""
    qualified = ctx.qualified(call.func)
    if qualified is None:
        return []
    module, _, name = qualified.rpartition(".")
    accepted = table[module][1].get(name) if module in table else None
    found: list[tuple[ast.AST, dict[str, Any], str]] = []
    if accepted is not None:
        for keyword in call.keywords:
            if keyword.arg is not None and keyword.arg not in accepted:
                found.append((call, {"call": ctx.text(call.func), "keyword": keyword.arg,
                                     **_suggestion(keyword.arg, accepted, cutoff=0.6)}, "keyword"))
    if (qualified in ("torch.stft", "torch.functional.stft") and len(call.args) < 10
            and not any(k.arg in ("return_complex", None) for k in call.keywords)):
        found.append((call, {"call": ctx.text(call.func)}, "stft"))
    return found


def _suggestion(name: str, names: Any, cutoff: float = 0.75) -> dict[str, str]:
    """`suggestion` (" (did you mean `LayerNorm`?)", or nothing) and `fix` for the hint."""
    # `Layernorm`: the case slipped (`Adamw`: the class `AdamW`, not the module `adamw`)
    same_letters = sorted((n for n in names if n.lower() == name.lower()), key=lambda n: n[0] != name[0])
    close = same_letters[:1] or difflib.get_close_matches(name, list(names), n=1, cutoff=cutoff)
    if not close:
        return {"suggestion": "", "fix": "Use a name this torch has (see its documentation)"}
    return {"suggestion": f" (did you mean `{close[0]}`?)", "fix": f"Use `{close[0]}`"}


def _import_of(imports: list[ast.Import], module: str, alias: str) -> ast.Import | None:
    """The `import torch.functional as F` that bound `alias`."""
    for node in imports:
        if any(name.name == module and (name.asname or name.name) == alias for name in node.names):
            return node
    return None


def _guarded(node: ast.AST, parents: dict[int, ast.AST], ctx: Context) -> bool:
    """The access sits in a `try` that catches its failure, or under an `if` that tests for it
    (`hasattr(...)`, a version): code written for several torch or NumPy versions."""
    child, parent = node, parents.get(id(node))
    while parent is not None:
        if isinstance(parent, ast.Try) and child in parent.body and any(
                handler.type is None or _names(handler.type) & _GUARDS for handler in parent.handlers):
            return True
        if isinstance(parent, (ast.If, ast.IfExp)) and any(
                word in ctx.text(parent.test) for word in ("hasattr", "version", "getattr")):
            return True
        child, parent = parent, parents.get(id(parent))
    return False


def _names(node: ast.expr) -> set[str]:
    """The exception names an `except` clause lists."""
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    return {item.attr if isinstance(item, ast.Attribute) else getattr(item, "id", "") for item in items}


def _assigned(expr: str | None, index: Any, ctx: Context) -> bool:
    """The file sets the attribute itself (`torch.nn.Layernorm = ...`, a shim for old versions)."""
    return expr is not None and any(
        isinstance(target, ast.Attribute) and ctx.text(target) == expr
        for assign in index.of(ast.Assign) for target in assign.targets)


def _rebound(node: ast.AST, index: Any) -> bool:
    """The name the access starts from is also a variable, parameter, function or class of the
    file (`for data, target in loader` after `from torch.utils import data`; `class
    Dataset(Dataset)`): lint cannot tell which one the line reads."""
    expr = node.func if isinstance(node, ast.Call) else node
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return False
    name = expr.id
    return (any(isinstance(n.ctx, ast.Store) and n.id == name for n in index.of(ast.Name))
            or any(n.arg == name for n in index.of(ast.arg))
            or any(n.name == name for n in index.of_any(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
