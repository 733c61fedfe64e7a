"""No import circles in the package: what a module imports (at its top, type-only imports under
`if TYPE_CHECKING:` included, as they are dependencies all the same; and inside its functions,
where a module defers a heavy or optional dependency: deferred, it is a dependency still)
never leads back to it. And no package reaches for another's private names."""

from __future__ import annotations

import ast
from pathlib import Path

import torchdoctor

PACKAGE = Path(torchdoctor.__file__).parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["torchdoctor", *path.relative_to(PACKAGE).with_suffix("").parts]
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _top_imports(statements: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Imports at module level, also inside `if`/`try`/`with` blocks (not inside functions or classes)."""
    found: list[ast.Import | ast.ImportFrom] = []
    for statement in statements:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            found.append(statement)
        elif isinstance(statement, ast.If):
            found += _top_imports(statement.body) + _top_imports(statement.orelse)
        elif isinstance(statement, ast.Try):
            for block in (statement.body, *(h.body for h in statement.handlers), statement.orelse, statement.finalbody):
                found += _top_imports(block)
        elif isinstance(statement, ast.With):
            found += _top_imports(statement.body)
    return found


def _all_imports(statements: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Every import of a module, at its top or deferred inside a function."""
    return [node for node in ast.walk(ast.Module(body=statements, type_ignores=[])) if isinstance(node, (ast.Import, ast.ImportFrom))]


def import_graph(deferred: bool = False) -> dict[str, set[str]]:
    """Module -> the package's modules it imports at its top (and in its functions, `deferred`)."""
    imports = _all_imports if deferred else _top_imports
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets: set[str] = set()
        for node in imports(ast.parse(path.read_text(encoding="utf-8")).body):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
                continue
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *([node.module] if node.module else [])])
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)  # `from package import module`
        graph[name] = {target for target in targets if target in modules and target != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_graph_sees_the_package() -> None:
    graph = import_graph()
    assert "torchdoctor.observe.events" in graph["torchdoctor.observe.session"]
    assert "torchdoctor.core.rule" in graph["torchdoctor.observe.detector"]


def test_cycles_are_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles() -> None:
    assert cycles(import_graph()) == []


def test_no_import_circles_through_deferred_imports() -> None:
    assert cycles(import_graph(deferred=True)) == []


def private_imports_across_packages() -> list[str]:
    """`from torchdoctor.<a>.x import _name` in a module outside package <a>: `file:line name`."""
    found = []
    for name, path in _modules().items():
        own = name.split(".")[1] if name.count(".") else ""
        for node in _all_imports(ast.parse(path.read_text(encoding="utf-8")).body):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("torchdoctor."):
                package = node.module.split(".")[1]  # type: ignore[union-attr]
                found += [f"{path.relative_to(PACKAGE)}:{node.lineno} {alias.name}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__") and package != own]
    return found


def test_no_private_name_is_imported_across_packages() -> None:
    assert private_imports_across_packages() == []


#: unit family package -> how a module of it defines a unit (core/plugins.py's families)
UNIT_FAMILIES = {"torchdoctor.observe.detectors": "Detector", "torchdoctor.observe.crash": "EXPLAINERS",
                 "torchdoctor.linter.checks": "@lint_check", "torchdoctor.health.checks": "NAME"}


def _defines_units(path: Path, mark: str) -> bool:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if mark == "Detector" and isinstance(node, ast.ClassDef):
            if any(ast.unparse(base).endswith("Detector") for base in node.bases):
                return True
        elif mark == "@lint_check" and isinstance(node, ast.FunctionDef):
            if any(ast.unparse(decorator).startswith("lint_check(") for decorator in node.decorator_list):
                return True
        elif isinstance(node, ast.Assign) and any(isinstance(target, ast.Name) and target.id == mark for target in node.targets):
            return True
    return False


def unit_modules() -> set[str]:
    """The modules that define units (detectors, explainers, checks), by UNIT_FAMILIES."""
    return {name for name, path in _modules().items() for family, mark in UNIT_FAMILIES.items()
            if name.startswith(family + ".") and _defines_units(path, mark)}


def unit_imports() -> list[str]:
    """`unit -> other unit` for each module defining units that imports another such module:
    what they share belongs in a service module, so that a unit can be removed or replaced
    without breaking its neighbours."""
    units = unit_modules()
    graph = import_graph(deferred=True)
    return [f"{unit} -> {other}" for unit in sorted(units) for other in sorted(graph[unit] & units)]


def test_every_unit_family_is_seen() -> None:
    """A family whose units the marks no longer recognise would pass the next test unseen."""
    units = unit_modules()
    assert all(sum(unit.startswith(family + ".") for unit in units) >= 5 for family in UNIT_FAMILIES)


def test_a_unit_module_imports_no_other_unit_module() -> None:
    assert unit_imports() == []
