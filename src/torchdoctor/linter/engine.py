"""The lint engine: registered checks, one parse and one walk per file, fixes applied safely.

Checks register with `@lint_check(rules, on)` (see `torchdoctor.linter.api`); the engine keeps only
those of enabled rules, builds dispatch tables by node type (and, for calls, by the callee's
last name), and lints each file with one `ast.parse` and one `Context` walk with checks
(and one more, without them or after them, in a file that calls its own functions with
objects it learns about: parameters.py). Files
that do not mention torch skip the checks that need torch names (`needs_torch=True`, the
default).
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from torchdoctor.core import plugins
from torchdoctor.core.finding import Finding, Fix
from torchdoctor.core.rule import Rule
from torchdoctor.linter.context import Context, Handler
from torchdoctor.linter.fixes import apply_fixes
from torchdoctor.linter.model import Kind
from torchdoctor.linter.parameters import callables, parameter_kinds
from torchdoctor.linter.source import Source

#: `on=FILE_END`: the check runs once after the walk, with the module node (all scopes known)
FILE_END = "file-end"


@dataclass(frozen=True)
class Check:
    func: Handler
    codes: tuple[str, ...]
    on: type | str
    names: frozenset[str] | None
    tracks: frozenset[str]
    needs_torch: bool
    needs_text: frozenset[str] = frozenset()
    stores: bool = False


_CHECKS: list[Check] = []
_LOADED = False


def lint_check(
    rules: Rule | Iterable[Rule],
    on: type | str,
    *,
    names: Iterable[str] | None = None,
    tracks: Iterable[str] = (),
    needs_torch: bool = True,
    needs_text: Iterable[str] = (),
    stores: bool = False,
) -> Callable[[Handler], Handler]:
    """Register `func(node, ctx)` as a detector of `rules` (rule objects: a code is never spelled here).

    `on` is an `ast` node class (called as the walk enters every such node) or `FILE_END`.
    `names` (for `on=ast.Call` or `ast.Attribute` only): call the check only for calls whose
    callee's last name (`softmax` in `F.softmax(...)`, `step` in `opt.step()`) is one of these,
    or attributes of one of these names (`data` in `x.data`); imports are resolved first, so
    `from torch.nn.functional import softmax as sm` still counts as `softmax`. `tracks`: method names to record as `Event`s in every scope (for FILE_END
    checks that reason about the order of calls). `needs_torch=False` when the check can fire
    in a file that never mentions torch (it matches by variable names, not imports).
    `needs_text`: the check cannot report in a file whose text contains none of these strings
    (`backward` for a check that reports at a backward() call), and is not called there; give
    it only when every check of the rule that feeds the reporting one says the same.
    `stores` (for `on=ast.Name` only): call the check only for names being bound (`ast.Store`:
    targets of assignments, loops, `with ... as`, `:=`), not for every name read.

    The arguments are checked as the function is decorated (a `PluginError` naming it): a check
    with a wrong signature, no rule or a rule's code instead of the rule would never report.
    """
    given = tuple(rules) if isinstance(rules, Iterable) and not isinstance(rules, str) else (rules,)

    def register(func: Handler) -> Handler:
        problem = _check_problem(func, given, on, {"names": names, "tracks": tracks, "needs_text": needs_text},
                                 stores)
        if problem:
            raise plugins.PluginError(f"{func.__module__}: the @lint_check function {func.__qualname__} {problem}")
        _CHECKS.append(Check(func, tuple(rule.code for rule in given), on,
                             frozenset(names) if names is not None else None,
                             frozenset(tracks), needs_torch, frozenset(needs_text), stores))
        return func

    return register


def _check_problem(func: Handler, rules: tuple[object, ...], on: object,
                   words: dict[str, Iterable[str] | None], stores: bool = False) -> str | None:
    """What makes a `@lint_check` unusable: its signature, its rules, `on`, or a collection of names
    given as one string (`names="step"` would be the letters s, t, e, p)."""
    problem = plugins.call_problem(func, 2)
    if problem:
        return f"{problem}; a check is called as check(node, ctx)"
    if not rules:
        return "names no rule, so it would never run"
    for rule in rules:
        if not isinstance(rule, Rule):
            return f"is given {rule!r}, not a Rule (give the rule object, RULE, not its code)"
    if on != FILE_END and not (isinstance(on, type) and issubclass(on, ast.AST)):
        return f"is given on={on!r}, neither an ast node class nor FILE_END"
    if words["names"] is not None and on is not ast.Call and on is not ast.Attribute:
        return "is given names=, which only applies to on=ast.Call or ast.Attribute"
    if stores and on is not ast.Name:
        return "is given stores=True, which only applies to on=ast.Name"
    for keyword, value in words.items():
        if isinstance(value, str):
            return f"is given {keyword}={value!r}, one string, not a collection of them ({keyword}={{{value!r}}})"
    return None


def all_checks() -> list[Check]:
    """Every registered check (importing the modules of `torchdoctor.linter.checks` and of the
    `torchdoctor.lint` plugins once, core/plugins.py)."""
    global _LOADED
    if not _LOADED:
        plugins.modules("torchdoctor.lint")
        _LOADED = True
    return list(_CHECKS)


@dataclass
class Tables:
    handlers: dict[type, list[tuple[Handler, tuple[str, ...]]]] = field(default_factory=dict)
    call_handlers: dict[str, list[tuple[Handler, tuple[str, ...]]]] = field(default_factory=dict)
    attribute_handlers: dict[str, list[tuple[Handler, tuple[str, ...]]]] = field(default_factory=dict)
    file_end: list[tuple[Handler, tuple[str, ...]]] = field(default_factory=list)
    tracked: frozenset[str] = frozenset()


def _tables(checks: Iterable[Check], tracked: frozenset[str] | None = None) -> Tables:
    """Dispatch tables of `checks`; the calls they record as events are `tracked` (by default
    those `checks` track: a check left out of a file by `needs_text` still decides what is
    recorded, so the other checks see the same events in every file)."""
    tables = Tables()
    tracks: set[str] = set()
    for item in checks:
        entry = (item.func, item.codes)
        tracks |= item.tracks
        if item.on == FILE_END:
            tables.file_end.append(entry)
        elif item.stores:  # kept under ast.Store: the walk calls them for bound names only
            tables.handlers.setdefault(ast.Store, []).append(entry)
        elif item.names is not None:
            by_name = tables.call_handlers if item.on is ast.Call else tables.attribute_handlers
            for name in item.names:
                by_name.setdefault(name, []).append(entry)
        else:
            tables.handlers.setdefault(item.on, []).append(entry)  # type: ignore[arg-type]
    tables.tracked = frozenset(tracks) if tracked is None else tracked
    return tables


@dataclass
class FileResult:
    """What linting one file gave: findings (suppressions applied) and rule crashes."""

    findings: list[Finding]
    errors: list[tuple[str, BaseException]]
    text: str


class Engine:
    """Lints sources with the checks of the enabled rules."""

    def __init__(self, enabled: Iterable[str]) -> None:
        self.enabled = frozenset(enabled)
        self._active = [c for c in all_checks() if self.enabled.intersection(c.codes)]
        self._needs_text = frozenset(t for c in self._active for t in c.needs_text)
        self._tracked = {torch: frozenset(t for c in self._active if torch or not c.needs_torch for t in c.tracks)
                         for torch in (True, False)}
        self._tables: dict[tuple[bool, frozenset[str]], Tables] = {}

    def tables(self, text: str) -> Tables:
        """The checks for a file with this text: those that need torch only if it mentions
        torch, those with `needs_text` only if it contains one of their strings."""
        torch = "torch" in text or "lightning" in text
        present = frozenset(t for t in self._needs_text if t in text)
        tables = self._tables.get((torch, present))
        if tables is None:
            chosen = (c for c in self._active if (torch or not c.needs_torch)
                      and (not c.needs_text or not c.needs_text.isdisjoint(present)))
            tables = self._tables[torch, present] = _tables(chosen, self._tracked[torch])
        return tables

    def lint(self, source: Source, tree: ast.Module | None = None) -> FileResult:
        """Lint parsed source (parsing it first when `tree` is None; SyntaxError propagates)."""
        if tree is None:
            tree = parse(source.text, source.path)
        text = source.text
        tables = self.tables(text)
        if not _calls_own_functions(tree, text):
            ctx = self._walk(source, tree, tables)
        elif any(word in text for word in _TRAINS):  # likely to learn: learn first, then walk once with checks
            ctx = self._walk(source, tree, tables, self._given(source, tree))
        else:  # likely to learn nothing: walk with checks, and again only when it learned something
            ctx = self._walk(source, tree, tables)
            given = self._given(source, tree) if _walk_failed(ctx) else _learned(ctx)
            if given is not None:
                ctx = self._walk(source, tree, tables, given)
        for func, codes in tables.file_end:
            try:
                func(tree, ctx)
            except Exception as exc:  # a rule's bug must not lose the other rules' findings
                ctx.errors.append((codes[0], exc))
        return FileResult(ctx.findings, ctx.errors, text)

    def _walk(self, source: Source, tree: ast.Module, tables: Tables,
              given: dict[str, dict[str, Kind]] | None = None) -> Context:
        ctx = Context(source, self.enabled, tables.handlers, tables.call_handlers, tables.tracked, given,
                      attribute_handlers=tables.attribute_handlers)
        try:
            ctx.run(tree)
        except RecursionError as exc:  # absurdly deep expressions: keep what was found
            ctx.errors.append(("*", exc))  # "*": the walk itself, so every rule
        return ctx

    def _given(self, source: Source, tree: ast.Module) -> dict[str, dict[str, Kind]] | None:
        """A walk with no checks, which only learns what the file's functions are given (when
        the walk with checks stopped short, a walk without them may still get through)."""
        ctx = self._walk(source, tree, Tables())
        return None if ctx.errors else _learned(ctx)

    def lint_and_fix(self, source: Source, unsafe: bool = False, rounds: int = 8) -> tuple[FileResult, int]:
        """Lint, apply the fixes allowed, re-lint, until nothing more is fixable.

        Every fixed text must parse; a round whose result does not is dropped (and reported
        by the caller as unfixable). Returns the final result and the number of fixes applied.
        """
        result = self.lint(source)
        fixed = 0
        for _ in range(rounds):
            fixes = [f.fix for f in result.findings if fixable(f.fix, unsafe)]
            if not fixes:
                break
            text, count = apply_fixes(source, fixes)  # type: ignore[arg-type]
            if count == 0 or text == source.text:
                break
            try:
                tree = parse(text, source.path)
            except SyntaxError:
                break
            source = Source(path=source.path, text=text, encoding=source.encoding)
            fixed += count
            result = self.lint(source, tree)
        return result, fixed


#: words of a training script, whose functions are usually given a model, a loader or an
#: optimizer (a model or library file's functions seldom are: 8 of diffusers' 568 that call
#: their own functions learn anything)
_TRAINS = ("optim", "DataLoader", "backward")


def _learned(ctx: Context) -> dict[str, dict[str, Kind]] | None:
    """What a walk that knew nothing of parameters learned the file's functions are given. The
    checks do not change what a walk learns (they read its state, never write it), so a walk
    with checks serves as well as one without."""
    return parameter_kinds(callables(ctx), ctx.arguments) or None


def _walk_failed(ctx: Context) -> bool:
    """The walk itself stopped (a tree too deep), not only a check."""
    return not ctx.walked_whole_file


def _calls_own_functions(tree: ast.Module, text: str) -> bool:
    """Whether a module-level function of the file, with parameters, is called in it (its
    name followed by `(` at least twice: its `def` and a call), or a class of it is built:
    then the walk may learn what they are given."""
    return any((isinstance(node, ast.ClassDef) or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and bool(node.args.args)) and text.count(node.name + "(") >= 2 for node in tree.body)


def fixable(fix: Fix | None, unsafe: bool) -> bool:
    return fix is not None and bool(fix.edits) and (fix.safe or unsafe)


def parse(text: str, filename: str) -> ast.Module:
    """`ast.parse` without the warnings CPython prints about the user's code (invalid escapes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text, filename=filename)


def describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
