"""What the one walk over a file remembers, for rules to read: kinds of values, scopes, classes,
loops and the ordered calls of each function (its events)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Kind:
    """What a value is, as far as the source shows.

    `tag` is one of: `model` (an nn.Module instance; `detail` is what its output is, e.g.
    `probs` for a model ending in nn.Softmax), `loss_fn` (a loss module; `detail` its class
    name), `loss` (a loss value; `detail` the loss), `optimizer`, `scheduler`, `scaler`,
    `dataloader`, `sampler`, `dataset`, `rng` (a random generator object), `probs` (softmax
    output), `sigmoid` (sigmoid output), `log_probs` (log_softmax output), `batch` (a value
    drawn from a DataLoader), `output` (what a model returned), `parameter` (an nn.Parameter),
    `checkpoint` (what `torch.load` returned, or a part of it), `mapping` / `tuple` (a dict or
    tuple display whose items have kinds: `items`).
    `node` is where the value was made (the call), for messages and for reading its arguments.
    """

    tag: str
    detail: str = ""
    node: ast.AST | None = field(default=None, compare=False)
    #: for `mapping` (a dict display) and `tuple` values: the kinds of their items by key / index
    items: tuple[tuple[object, Kind | None], ...] = field(default=(), compare=False)

    def item(self, key: object) -> Kind | None:
        for name, kind in self.items:
            if name == key:
                return kind
        return None


@dataclass(slots=True)
class Event:
    """One call of interest inside a scope, in source order.

    `name` is the callee's last name (`backward`, `step`, `zero_grad`, `eval`, ...) or, for
    calls of functions and methods defined in the same file, `call`. `receiver` is the dotted
    text of the object the method is called on (`optimizer`, `self.scaler`), when it is one.
    `loops` are the enclosing loops of this scope (outermost first). `path` locates the call's
    statement: one `(statement list id, index)` pair per nesting level, outermost first, so
    `steps.order(a, b)` can tell whether one call runs before the other in the same pass, or
    whether they sit in exclusive branches. `scope` is the function (or module) it is in.
    """

    name: str
    node: ast.stmt | ast.expr
    receiver: str | None
    loops: tuple[ast.AST, ...]
    path: tuple[tuple[int, int], ...]
    grad_disabled: bool
    conditions: tuple[ast.If, ...]
    scope: Scope | None = None
    kind: Kind | None = None  # what the receiver held when the call ran (method calls only)

    @property
    def line(self) -> int:
        return self.node.lineno


@dataclass(slots=True)
class LoopInfo:
    """A `for`/`while` loop: what it iterates (`dataloader`, `range`, ...) and its outer loop."""

    node: ast.For | ast.AsyncFor | ast.While
    iterates: str  # "dataloader", "range", "other", or "" for while loops
    parent: ast.AST | None
    iter_name: str | None = None  # dotted name of the iterable, when it is one (after unwrapping enumerate/tqdm)


@dataclass(eq=False)
class ClassInfo:
    """A class of the file: its bases (qualified when imported), and what it looks like."""

    node: ast.ClassDef
    name: str
    bases: tuple[str, ...]
    is_module: bool
    is_dataset: bool
    methods: frozenset[str]
    attributes: dict[str, Kind | None] = field(default_factory=dict)
    output: str = ""  # kind tag of what forward() always returns ("probs", ..., "tuple"), "" if unknown
    output_node: ast.AST | None = None  # where forward() makes it (the softmax call)
    #: for `output == "tuple"`: the kinds of the returned tuple's items, by index
    output_items: tuple[tuple[object, Kind | None], ...] = ()

    @property
    def looks_like_module(self) -> bool:
        """An nn.Module subclass, or a class with bases we cannot see that defines forward()."""
        return self.is_module or (bool(self.bases) and "forward" in self.methods)


@dataclass(eq=False)
class Scope:
    """A function (or the module body): its bindings, its events, its loops."""

    node: ast.AST
    name: str  # "train", "Net.forward", "<module>"
    cls: ClassInfo | None = None
    params: tuple[str, ...] = ()
    bindings: dict[str, Kind | None] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    loops: dict[int, LoopInfo] = field(default_factory=dict)
    returns: list[Kind | None] = field(default_factory=list)
    grad_disabled: bool = False  # decorated with @torch.no_grad() / @torch.inference_mode()
    parent: Scope | None = None

    def loop(self, node: ast.AST) -> LoopInfo | None:
        return self.loops.get(id(node))
