"""What `check` reads in the target's source before importing it: importing a file runs its
module-level code, and a training script without a factory would train for minutes only to be
told that the factory is missing. So the file is imported only when its source binds the factory's
name, and not when its module level would run a training loop on import.

Only the syntax tree is read: comments and strings are text, never calls.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

#: the call that makes a loop a training loop: `loss.backward()`, `scaler.scale(loss).backward()`,
#: `accelerator.backward(loss)`. A loop that only calls `.step()` may step a scheduler or an
#: environment at import, which is no reason to refuse the file.
TRAINING_CALLS = frozenset({"backward"})
LOOPS = (ast.For, ast.AsyncFor, ast.While)


@dataclass(frozen=True)
class Source:
    """What the module level of a file binds and runs, as far as its text says."""

    tree: ast.Module

    def binds(self, name: str) -> bool:
        """False only when no statement of the file can define `name` at the module level: no
        def, class, import or assignment of that name anywhere in it, no star import, no write
        to `globals()` (erring towards importing: the import then says what is missing)."""
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                return True
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                if any(alias.name == "*" or (alias.asname or alias.name.partition(".")[0]) == name for alias in node.names):
                    return True
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name:
                return True
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("globals", "setattr", "exec"):
                return True
        return False

    def functions(self) -> list[str]:
        """The functions the module level defines, for the hint "it defines a, b"."""
        return sorted({node.name for node in _module_level(self.tree.body, conditional=True)
                       if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))})

    def training_on_import(self) -> str | None:
        """`the loop at line 12 calls loss.backward() (line 15)` when importing the file would
        train: a loop at the module level, run unconditionally (not under an `if`, so not under
        `if __name__ == "__main__":`), that calls backward(), directly or in a function
        of the file that the module level calls. None otherwise."""
        defined = {node.name: node for node in _module_level(self.tree.body, conditional=True)
                   if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for node in _module_level(self.tree.body, conditional=False):
            if isinstance(node, (ast.If, ast.Try, ast.With, ast.AsyncWith, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue  # blocks run unconditionally come next on their own; an `if` or a def's body may not run
            if isinstance(node, LOOPS) and (call := _training_call(node)) is not None:
                return f"the loop at line {node.lineno} calls {ast.unparse(call.func)}() (line {call.lineno})"
            for called in _own_nodes(node):
                if not (isinstance(called, ast.Call) and isinstance(called.func, ast.Name) and called.func.id in defined):
                    continue
                name = called.func.id
                for loop in (n for n in _own_nodes(defined[name]) if isinstance(n, LOOPS)):
                    if (call := _training_call(loop)) is not None:
                        return (f"line {called.lineno} calls {name}(), whose loop at line {loop.lineno} "
                                f"calls {ast.unparse(call.func)}() (line {call.lineno})")
        return None


def _module_level(body: list[ast.stmt], conditional: bool) -> Iterator[ast.stmt]:
    """The statements run at import: the body, and the blocks of `try`/`with` in it (and of `if`
    when `conditional`); never the bodies of functions or classes."""
    for node in body:
        yield node
        if isinstance(node, ast.If) and conditional:
            yield from _module_level(node.body + node.orelse, conditional)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            yield from _module_level(node.body, conditional)
        elif isinstance(node, ast.Try):
            blocks = node.body + node.orelse + node.finalbody
            if conditional:
                blocks += [stmt for handler in node.handlers for stmt in handler.body]
            yield from _module_level(blocks, conditional)


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under `node`, not entering nested functions, classes or lambdas (their code
    does not run where they are defined)."""
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            yield child
            yield from _own_nodes(child)


def _training_call(loop: ast.AST) -> ast.Call | None:
    return next((n for n in _own_nodes(loop) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr in TRAINING_CALLS), None)


def parse(text: str) -> Source | None:
    """The file's syntax tree, or None when it does not parse (the import says why, with its line)."""
    try:
        return Source(ast.parse(text))
    except (SyntaxError, ValueError):
        return None
