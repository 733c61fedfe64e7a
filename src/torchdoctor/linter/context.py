"""The one walk over a file: it keeps the state rules read up to date and calls their checks.

`Context` walks the tree once, in source order, and keeps what rules need (state.py: the
import table, the current function/class/loop/`with`/`if`, the kinds of variables assigned so
far, and the calls of interest of every function, its events). Rule checks registered for a
node type are called as the walk enters such a node; file-level checks run after it (see
`engine`). They report through the same `ctx` (reporter.py).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Mapping
from typing import Any

from torchdoctor.linter import flow
from torchdoctor.linter.model import ClassInfo, Event, Kind, LoopInfo, Scope
from torchdoctor.linter.names import chain_root, dotted, terminal
from torchdoctor.linter.reporter import Reporter
from torchdoctor.linter.source import Source
from torchdoctor.linter.state import WalkState

Handler = Callable[[Any, "Context"], None]

_BUILTINS = frozenset(dir(builtins))
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_GRAD_OFF = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
                       "torch.autograd.inference_mode", "torch.autograd.grad_mode.no_grad"})
_GRAD_ON = frozenset({"torch.enable_grad", "torch.autograd.enable_grad"})
_SET_GRAD = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled"})
_BLOCK_FIELDS = frozenset({"body", "orelse", "finalbody"})


def _fields() -> dict[type, tuple[tuple[str, bool], ...]]:
    """Child fields of every node class (`ctx` left out), and whether each is a statement list."""
    table: dict[type, tuple[tuple[str, bool], ...]] = {}
    for name in dir(ast):
        cls = getattr(ast, name)
        if isinstance(cls, type) and issubclass(cls, ast.AST):
            table[cls] = tuple(
                (f, f in _BLOCK_FIELDS) for f in cls._fields
                if f not in ("ctx", "type_comment") and not (cls is ast.Constant and f == "kind")
            )
    return table


FIELDS = _fields()
_LEAVES = frozenset({ast.Name, ast.Constant, ast.Pass, ast.Break, ast.Continue, ast.alias, ast.Global, ast.Nonlocal})
#: nodes with bookkeeping of their own around the generic visit: the Context method for each
_SPECIAL = {
    ast.Module: "_module", ast.FunctionDef: "_function", ast.AsyncFunctionDef: "_function", ast.Lambda: "_lambda",
    ast.ClassDef: "_class", ast.For: "_for", ast.AsyncFor: "_for", ast.While: "_while", ast.With: "_with",
    ast.AsyncWith: "_with", ast.If: "_if", ast.Assign: "_assign", ast.AnnAssign: "_assign",
    ast.AugAssign: "_augassign", ast.Call: "_call", ast.Import: "_import", ast.ImportFrom: "_import",
    ast.Return: "_return",
}
Visitor = Callable[["Context", Any], None]
_VISITORS: dict[tuple[frozenset[type], bool], dict[type, Visitor | None]] = {}

class Context(WalkState, Reporter):
    """The walk over one file: the state rules read (`WalkState`), how they report
    (`Reporter`), and the walk that keeps the one up to date and calls the checks."""

    def __init__(
        self,
        source: Source,
        enabled: frozenset[str],
        handlers: dict[type, list[tuple[Handler, tuple[str, ...]]]],
        call_handlers: dict[str, list[tuple[Handler, tuple[str, ...]]]],
        tracked: frozenset[str],
        parameter_kinds: Mapping[str, Mapping[str, Kind]] | None = None,
        *,
        attribute_handlers: dict[str, list[tuple[Handler, tuple[str, ...]]]] | None = None,
    ) -> None:
        WalkState.__init__(self, source)
        Reporter.__init__(self, source, enabled)
        #: function name -> parameter -> the kind every call of this file passes it (see `arguments`)
        self.parameter_kinds = parameter_kinds or {}
        #: calls of this file's functions by name: the kinds of their arguments, for the next walk
        self.arguments: dict[str, list[tuple[list[Kind | None], dict[str, Kind | None]]]] = {}
        self.errors: list[tuple[str, BaseException]] = []
        #: every call the walk met, in its order (FILE_END checks read it instead of walking the tree)
        self.calls: list[ast.Call] = []
        self._skipped = False  # the walk left out a part of the tree (type parameters, 3.12+)
        self._checking = False  # the checks of one node are running
        self._kinds: dict[ast.expr, Kind | None] = {}  # the kinds they asked for
        self._path: list[tuple[int, int]] = []
        self._class_body: ClassInfo | None = None  # the class whose body (not a method) is being walked
        self._handlers = handlers
        self._call_handlers = call_handlers
        self._attribute_handlers = attribute_handlers or {}
        self._tracked = tracked
        self._visitors = _visitors(frozenset(handlers), bool(self._attribute_handlers))

    @property
    def walked_whole_file(self) -> bool:
        """The walk got through the whole tree (a tree too deep stops it, `engine._walk`, and
        it does not enter type parameters): then every loop of the file is in the `loops` of
        some scope and every call in `calls`, and a FILE_END check may look for what it needs
        there instead of walking the tree."""
        return not self._skipped and not any(code == "*" for code, _ in self.errors)

    def kind(self, node: ast.expr) -> Kind | None:
        """What value `node` holds (see `flow.kind_of`). While the checks of one node run, the
        state the answer comes from stands still (checks read it, never write it), so each
        kind they ask for is found once (`flow.kind_of` of an assignment's value or a callee
        is asked by several checks of one statement)."""
        if not self._checking:
            return flow.kind_of(node, self)
        kinds = self._kinds
        if node in kinds:
            return kinds[node]
        kind = kinds[node] = flow.kind_of(node, self)
        return kind

    # ------------------------------------------------------------------ the walk

    def run(self, tree: ast.Module) -> None:
        self.visit(tree)

    def visit(self, node: ast.AST) -> None:
        visitor = self._visitors.get(node.__class__)
        if visitor is not None:
            visitor(self, node)

    def _children(self, node: ast.AST) -> None:
        parent = self.parent
        self.parent = node
        visitors = self._visitors.get
        for name, is_block in FIELDS[node.__class__]:
            value = getattr(node, name)
            if value.__class__ is list:
                if is_block:
                    self._block_list(value)
                    self.parent = node
                else:
                    for item in value:
                        visitor = visitors(item.__class__)  # None for None, and for what needs no visit
                        if visitor is not None:
                            visitor(self, item)
            else:
                visitor = visitors(value.__class__)
                if visitor is not None:
                    visitor(self, value)
        self.parent = parent

    def _block_list(self, body: list[ast.stmt]) -> None:
        saved = self.statement
        block = id(body)
        path = self._path
        path.append((block, 0))
        depth = len(path) - 1
        visitors = self._visitors.get
        for index, statement in enumerate(body):
            path[depth] = (block, index)
            self.statement = statement
            visitor = visitors(statement.__class__)
            if visitor is not None:
                visitor(self, statement)
        path.pop()
        self.statement = saved

    def _dispatch(self, handlers: list[tuple[Handler, tuple[str, ...]]], node: ast.AST) -> None:
        self._checking = True
        for handler, codes in handlers:
            try:
                handler(node, self)
            except Exception as exc:  # a rule's bug must not lose the rest of the file
                self.errors.append((codes[0], exc))
        self._checking = False
        if self._kinds:
            self._kinds.clear()

    def _generic(self, node: ast.AST) -> None:
        handlers = self._handlers.get(node.__class__)
        if handlers is not None:
            self._dispatch(handlers, node)
        self._children(node)

    def _checked_leaf(self, node: ast.AST) -> None:
        self._dispatch(self._handlers[node.__class__], node)

    def _attribute(self, node: ast.Attribute) -> None:
        """An attribute, where checks of attributes by name exist: those of its name, then its
        checks and children."""
        handlers = self._attribute_handlers.get(node.attr)
        if handlers is not None:
            self._dispatch(handlers, node)
        self._generic(node)

    def _name(self, node: ast.Name) -> None:
        """A name, where checks of names being bound (`stores=True`, kept under `ast.Store`)
        exist: most names are read, and those checks are called for the few bound."""
        handlers = self._handlers.get(ast.Name)
        if handlers is not None:
            self._dispatch(handlers, node)
        if node.ctx.__class__ is ast.Store:
            self._dispatch(self._handlers[ast.Store], node)

    # special nodes: bookkeeping around the generic visit

    def _module(self, node: ast.Module) -> None:
        self.module_scope.node = node
        self._generic(node)

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        self.imports.add(node)
        handlers = self._handlers.get(node.__class__)
        if handlers is not None:
            self._dispatch(handlers, node)

    def _class(self, node: ast.ClassDef) -> None:
        self._skipped = self._skipped or bool(getattr(node, "type_params", None))
        for decorator in node.decorator_list:
            self.visit(decorator)
        for base in node.bases:
            self.visit(base)
        for kw in node.keywords:
            self.visit(kw)
        info = self._class_info(node)
        self.classes[node.name] = info
        handlers = self._handlers.get(ast.ClassDef)
        if handlers is not None:
            self._dispatch(handlers, node)
        saved = self.class_info, self._class_body, self.scope
        self.class_info = self._class_body = info
        parent = self.parent
        self.parent = node
        self._block_list(node.body)
        self.parent = parent
        self.class_info, self._class_body, self.scope = saved

    def _class_info(self, node: ast.ClassDef) -> ClassInfo:
        bases = []
        is_module = is_dataset = False
        for base in node.bases:
            name = self.qualified(base) or dotted(base) or ""
            bases.append(name)
            local = self.classes.get(name)
            if local is not None:
                is_module = is_module or local.is_module
                is_dataset = is_dataset or local.is_dataset
            elif name in flow.MODULE_BASES or (name.startswith("torch.nn.") and name[9:10].isupper()):
                is_module = True
            elif name in flow.DATASET_BASES or name.startswith("torchvision.datasets."):
                is_dataset = True
        methods = frozenset(s.name for s in node.body if isinstance(s, _FUNCTIONS))
        return ClassInfo(node=node, name=node.name, bases=tuple(bases), is_module=is_module,
                         is_dataset=is_dataset, methods=methods)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._skipped = self._skipped or bool(getattr(node, "type_params", None))
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.visit(node.args)
        if node.returns is not None:
            self.visit(node.returns)
        handlers = self._handlers.get(node.__class__)
        if handlers is not None:
            self._dispatch(handlers, node)
        method_of = self._class_body
        args = node.args
        params = tuple(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
        if args.vararg:
            params += (args.vararg.arg,)
        if args.kwarg:
            params += (args.kwarg.arg,)
        scope = Scope(
            node=node,
            name=f"{method_of.name}.{node.name}" if method_of is not None else node.name,
            cls=method_of,
            params=params,
            grad_disabled=self.grad_disabled or any(self.grad_mode(d) is False for d in node.decorator_list),
            parent=self.scope,
        )
        scope.bindings.update(dict.fromkeys(params))
        if method_of is None and self.scope is self.module_scope:
            scope.bindings.update(self.parameter_kinds.get(node.name, {}))
        elif method_of is not None and node.name == "__init__":  # what `Trainer(model, ...)` is given
            scope.bindings.update(self.parameter_kinds.get(method_of.name, {}))
        self.scopes.append(scope)
        if self.scope is self.module_scope and method_of is None:
            self.functions[node.name] = scope
        elif method_of is not None:
            self.methods[(id(method_of), node.name)] = scope
        saved = self.scope, self.loops, self.grad_disabled, self.conditions, self._class_body
        self.scope, self.loops, self.grad_disabled, self.conditions = scope, (), scope.grad_disabled, ()
        self._class_body = None
        parent = self.parent
        self.parent = node
        self._block_list(node.body)
        self.parent = parent
        self.scope, self.loops, self.grad_disabled, self.conditions, self._class_body = saved
        if method_of is not None and node.name == "forward" and scope.returns:
            tags = {k.tag if k is not None else "" for k in scope.returns}
            if len(tags) == 1 and tags <= {"probs", "sigmoid", "log_probs"}:
                method_of.output = tags.pop()
                method_of.output_node = scope.returns[0].node  # type: ignore[union-attr]
            elif tags == {"tuple"}:
                items = flow.agreed_items(scope.returns)  # type: ignore[arg-type]
                if items:
                    method_of.output, method_of.output_items = "tuple", items

    def _lambda(self, node: ast.Lambda) -> None:
        handlers = self._handlers.get(ast.Lambda)
        if handlers is not None:
            self._dispatch(handlers, node)
        self.visit(node.args)
        saved = self.loops
        self.loops = ()
        self.visit(node.body)
        self.loops = saved

    def _for(self, node: ast.For | ast.AsyncFor) -> None:
        handlers = self._handlers.get(node.__class__)
        if handlers is not None:
            self._dispatch(handlers, node)
        parent = self.parent
        self.parent = node
        self.visit(node.iter)
        iterates, name = flow.iterated(node.iter, self)
        self.scope.loops[id(node)] = LoopInfo(node, iterates, self.loops[-1] if self.loops else None, name)
        if iterates == "dataloader":
            self._bind_targets(node.target, node.iter, Kind("batch", "", node))
        else:
            self._bind_targets(node.target, None, None)
        self.visit(node.target)
        saved = self.loops
        self.loops = saved + (node,)
        self._block_list(node.body)
        self.loops = saved
        self._block_list(node.orelse)
        self.parent = parent

    def _bind_targets(self, target: ast.expr, iterable: ast.expr | None, kind: Kind | None) -> None:
        bindings = self.scope.bindings
        if iterable is not None and isinstance(iterable, ast.Call) and getattr(iterable.func, "id", None) == "enumerate":
            if isinstance(target, ast.Tuple) and len(target.elts) == 2:
                self._bind_targets(target.elts[0], None, None)
                target = target.elts[1]
        if isinstance(target, ast.Name):
            bindings[target.id] = kind
            return
        item = Kind(kind.tag, "item", kind.node) if kind is not None else None  # one tensor of the batch
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                bindings[node.id] = item

    def _while(self, node: ast.While) -> None:
        handlers = self._handlers.get(ast.While)
        if handlers is not None:
            self._dispatch(handlers, node)
        parent = self.parent
        self.parent = node
        self.scope.loops[id(node)] = LoopInfo(node, "", self.loops[-1] if self.loops else None)
        saved = self.loops
        self.loops = saved + (node,)
        self.visit(node.test)
        self._block_list(node.body)
        self.loops = saved
        self._block_list(node.orelse)
        self.parent = parent

    def grad_mode(self, expr: ast.expr) -> bool | None:
        """False for `no_grad()`/`inference_mode()`/`set_grad_enabled(False)`, True for
        `enable_grad()`, None for anything else (a context manager that leaves grad mode)."""
        call = expr if isinstance(expr, ast.Call) else None
        name = self.qualified(call.func if call is not None else expr)
        if name in _GRAD_OFF:
            if call is not None and call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value is False:
                return None  # inference_mode(False)
            return False
        if name in _GRAD_ON:
            return True
        if name in _SET_GRAD and call is not None and call.args and isinstance(call.args[0], ast.Constant):
            return bool(call.args[0].value)
        return None

    def disabled_inside(self, node: ast.With | ast.AsyncWith, disabled: bool) -> bool:
        """Whether autograd is off in the body of a `with` (`disabled`: whether it is off around it)."""
        for item in node.items:
            mode = self.grad_mode(item.context_expr)
            if mode is not None:
                disabled = not mode
        return disabled

    def _with(self, node: ast.With | ast.AsyncWith) -> None:
        handlers = self._handlers.get(node.__class__)
        if handlers is not None:
            self._dispatch(handlers, node)
        parent = self.parent
        self.parent = node
        for item in node.items:
            self.visit(item)
        saved = self.grad_disabled
        self.grad_disabled = self.disabled_inside(node, saved)
        self._block_list(node.body)
        self.grad_disabled = saved
        self.parent = parent

    def _if(self, node: ast.If) -> None:
        handlers = self._handlers.get(ast.If)
        if handlers is not None:
            self._dispatch(handlers, node)
        parent = self.parent
        self.parent = node
        self.visit(node.test)
        saved = self.conditions
        self.conditions = saved + (node,)
        self._block_list(node.body)
        self.conditions = saved
        self._block_list(node.orelse)
        self.parent = parent

    def _assign(self, node: ast.Assign | ast.AnnAssign) -> None:
        self._generic(node)
        value = node.value
        if value is None:
            return
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        kind = flow.kind_of(value, self)
        for target in targets:
            self._bind(target, kind, value)

    def _bind(self, target: ast.expr, kind: Kind | None, value: ast.expr | None) -> None:
        cls = target.__class__
        if cls is ast.Name:
            self.scope.bindings[target.id] = kind  # type: ignore[attr-defined]
        elif cls is ast.Attribute:
            base = target.value  # type: ignore[attr-defined]
            if base.__class__ is ast.Name and base.id == "self" and self.class_info is not None:
                self.class_info.attributes[target.attr] = kind  # type: ignore[attr-defined]
        elif cls is ast.Tuple or cls is ast.List:
            elements = target.elts  # type: ignore[attr-defined]
            if value is not None and value.__class__ is cls and len(value.elts) == len(elements):
                for element, item in zip(elements, value.elts):
                    self._bind(element, flow.kind_of(item, self), item)
                return
            if kind is not None and kind.tag == "tuple" and len(kind.items) == len(elements):
                for element, (_, item_kind) in zip(elements, kind.items):
                    self._bind(element, item_kind, None)
                return
            element_kind = None
            if kind is not None and kind.tag in ("batch", "output"):
                element_kind = Kind(kind.tag, "item", kind.node) if kind.tag == "batch" else kind
            for element in elements:
                self._bind(element, element_kind, None)
        elif cls is ast.Starred:
            self._bind(target.value, None, None)  # type: ignore[attr-defined]

    def _augassign(self, node: ast.AugAssign) -> None:
        self._generic(node)
        target = node.target
        if isinstance(target, ast.Name):
            old = self.scope.bindings.get(target.id)
            if old is None or old.tag != "loss":
                new = flow.kind_of(node.value, self)
                self.scope.bindings[target.id] = new if new is not None and new.tag == "loss" else None

    def _return(self, node: ast.Return) -> None:
        self._generic(node)
        if self.scope is not self.module_scope:
            self.scope.returns.append(flow.kind_of(node.value, self) if node.value is not None else None)

    def _call(self, node: ast.Call) -> None:
        self.calls.append(node)
        func = node.func
        name = terminal(func)
        if name is not None:
            if func.__class__ is ast.Name:
                resolved = self.imports.names.get(name)
                if resolved is not None:
                    name = resolved.rpartition(".")[2]
                    if name in self._tracked:
                        self._event(name, node, None)
                elif name not in _BUILTINS:
                    self._event("call", node, name)
                    starred = next((i for i, a in enumerate(node.args) if a.__class__ is ast.Starred), len(node.args))
                    self.arguments.setdefault(name, []).append((
                        [flow.kind_of(a, self) for a in node.args[:starred]],
                        {k.arg: flow.kind_of(k.value, self) for k in node.keywords if k.arg is not None}))
            elif name in self._tracked:
                value = func.value  # type: ignore[attr-defined]
                self._event(name, node, chain_root(value, flow.MODULE_METHODS), flow.kind_of(value, self))
            elif func.value.__class__ is ast.Name and func.value.id == "self":  # type: ignore[attr-defined]
                self._event("call", node, "self." + name)
            handlers = self._call_handlers.get(name)
            if handlers is not None:
                self._dispatch(handlers, node)
        handlers = self._handlers.get(ast.Call)
        if handlers is not None:
            self._dispatch(handlers, node)
        self._children(node)

    def _event(self, name: str, node: ast.stmt | ast.expr, receiver: str | None, kind: Kind | None = None) -> None:
        self.scope.events.append(Event(
            name=name, node=node, receiver=receiver, loops=self.loops, path=tuple(self._path),
            grad_disabled=self.grad_disabled, conditions=self.conditions, scope=self.scope, kind=kind,
        ))

    def record(self, name: str, node: ast.stmt | ast.expr, receiver: str | None = None) -> None:
        """Add an event of your own to the current scope (e.g. `grad_reset` for `p.grad = None`),
        for FILE_END checks to find in `scope.events` with the calls."""
        self._event(name, node, receiver)


def _visitors(handled: frozenset[type], by_attribute: bool = False) -> dict[type, Visitor | None]:
    """What the walk does as it enters a node of each class, given the classes that have checks
    (one table per such set, built once): the node's special method; its checks and children;
    its children only; its checks only (a leaf); or nothing (a leaf, or a node without
    children, that no check asks for: visiting it would do nothing, and costs a call). With
    `by_attribute`, attributes go through the checks of attributes by name."""
    table = _VISITORS.get((handled, by_attribute))
    if table is None:
        table = _VISITORS[handled, by_attribute] = {}
        for cls, fields in FIELDS.items():
            if cls in _SPECIAL:
                table[cls] = getattr(Context, _SPECIAL[cls])
            elif cls is ast.Name and ast.Store in handled:
                table[cls] = Context._name
            elif cls is ast.Attribute and by_attribute:
                table[cls] = Context._attribute
            elif cls in _LEAVES or not fields:
                table[cls] = Context._checked_leaf if cls in handled else None
            else:
                table[cls] = Context._generic if cls in handled else Context._children
    return table
