"""Autograd graphs kept alive across training steps.

TD147: a running total (`total += loss`) that still carries autograd history: at the next
step the total's graph contains the previous total's node, so every step's graph stays alive;
or a list that collects such tensors (`losses.append(loss)`) across steps.
TD148: `backward(retain_graph=True)` in a loop, where either nothing uses the retained graph
again, or the next steps' backward() passes reach further and further back into earlier
steps' graphs (a hidden state carried across steps without `.detach()`).

Both look at the graph only in a window of steps (the first ones, then a pair of consecutive
steps now and then): per step they cost a comparison.
"""

from __future__ import annotations

import ast
import functools
import linecache
import sys
import weakref
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any

import torch

from torchdoctor.core.locate import caller_in_user_code, user_frame
from torchdoctor.introspect.frames import read_locals
from torchdoctor.introspect.source import module_tree, own_nodes, scope_of
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Backward, Location, Step
from torchdoctor.observe.instruments.grad_calls import GradCalls
from torchdoctor.observe.support import backward_roots, graph_sequences
from torchdoctor.rules.memory.loss_accumulated_with_history import RULE as LOSS_HISTORY
from torchdoctor.rules.memory.retain_graph_in_loop import RULE as RETAIN_GRAPH

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: how far back from a total's node its previous value is looked for
ACCUMULATION_DEPTH = 4
#: user frames (innermost first) whose variables are looked at, from the optimizer.step() call
FRAMES = 4


def checked_step(step: int) -> bool:
    """The steps (1-based) at which accumulators are looked at: pairs of consecutive steps."""
    return step <= 6 or step % 64 in (0, 1)


# --- running totals -----------------------------------------------------------------------


@dataclass(frozen=True)
class Accumulation:
    """`target += value`, `target = target + value` or `target.append(value)` in the source
    of a function."""

    target: str  # `total` or `self.total`
    line: int
    value: str  # the source of what is added
    kind: str  # "augmented", "sum" or "append"
    statement: str


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


@functools.lru_cache(maxsize=1024)
def accumulations(code: CodeType) -> tuple[Accumulation, ...]:
    """Running totals in the function (or module) `code` belongs to."""
    tree = module_tree(code.co_filename)
    scope = scope_of(tree, code) if tree is not None else None
    if scope is None:
        return ()
    source = "".join(linecache.getlines(code.co_filename))
    found = []
    for node in own_nodes(scope):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
            target = _dotted(node.target)
            if target is not None:
                found.append(Accumulation(target, node.lineno, ast.get_source_segment(source, node.value) or "...",
                                          "augmented", ast.get_source_segment(source, node) or ""))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = _dotted(node.targets[0])
            value = node.value
            if (target is not None and isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Add, ast.Sub))
                    and _dotted(value.left) == target):
                found.append(Accumulation(target, node.lineno, ast.get_source_segment(source, value.right) or "...", "sum",
                                          ast.get_source_segment(source, node) or ""))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and _is_append(node.value):
            call = node.value
            target = _dotted(call.func.value) if isinstance(call.func, ast.Attribute) else None
            if target is not None:
                found.append(Accumulation(target, node.lineno, ast.get_source_segment(source, call.args[0]) or "...",
                                          "append", ast.get_source_segment(source, call) or ""))
    return tuple(sorted(found, key=lambda a: a.line))


def _is_append(node: ast.expr) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append"
            and len(node.args) == 1 and not node.keywords)


def _value(frame: FrameType, target: str) -> Any:
    owner, _, attribute = target.partition(".")
    value = read_locals(frame).get(owner)  # not f_locals: its snapshot would keep the loop's variables alive
    return getattr(value, attribute, None) if attribute else value


def reaches(node: Any, wanted: Any, depth: int = ACCUMULATION_DEPTH, limit: int = 256) -> bool:
    """Whether `wanted` is among the nodes `node` leads to within `depth` edges."""
    level = [node]
    visited = 0
    for _ in range(depth):
        following = []
        for current in level:
            for child, _index in getattr(current, "next_functions", ()):
                if child is wanted:
                    return True
                if child is not None:
                    following.append(child)
                    visited += 1
        if not following or visited > limit:
            return False
        level = following
    return False


def user_frames(frame: FrameType | None, count: int = FRAMES) -> list[FrameType]:
    found: list[FrameType] = []
    frame = user_frame(frame)
    while frame is not None and len(found) < count:
        found.append(frame)
        frame = user_frame(frame.f_back)
    return found


class LossHistory(Detector):
    """TD147: a running total whose graph spans steps (it holds the previous total's node), or
    a list that keeps collecting tensors with their history (it still holds the last step's)."""

    ORDER = 280
    rules = (LOSS_HISTORY,)
    #: how far back from its end a list is searched for the previous step's tensor
    LIST_TAIL = 256

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        #: (code, target) -> what the total or list held at the previous checked step: the
        #: total's autograd node, or the list's last tensor
        self._held: dict[tuple[CodeType, str], Any] = {}
        self._reported: set[tuple[CodeType, str]] = set()
        self._backpropagated: set[tuple[CodeType, str]] = set()

    def on_backward(self, event: Backward) -> None:
        """A total that backward() goes through is what gets trained (a carried state, a loss
        summed on purpose): not a metric, not this bug."""
        if not self._held:
            return
        roots = backward_roots(event.tensors)
        for key, held in list(self._held.items()):
            node = held.grad_fn if isinstance(held, torch.Tensor) else held
            if any(root is node or reaches(root, node, depth=64, limit=4096) for root in roots):
                self._backpropagated.add(key)
                del self._held[key]

    def on_step(self, event: Step) -> None:
        self._check(self.ctx.steps + 1)

    def on_backward_end(self, event: Backward) -> None:
        """Weights updated by hand (`p.data.add_(...)`, no torch optimizer): each backward()
        is a step."""
        if not self.ctx.optimizers.known:
            self._check(self.ctx.backward.completed)

    def _check(self, step: int) -> None:
        if not checked_step(step):
            if self._held:
                self._held.clear()  # never keep a graph alive outside the window
            return
        held, self._held = self._held, {}
        for frame in user_frames(sys._getframe(2)):
            for accumulation in accumulations(frame.f_code):
                key = (frame.f_code, accumulation.target)
                if key in self._reported or key in self._backpropagated:
                    continue
                value = _value(frame, accumulation.target)
                now = self._marker(value, accumulation.kind)
                if now is None:
                    continue
                previous = held.get(key)
                if previous is not None and previous is not now and self._spans(value, now, previous, accumulation.kind):
                    self._reported.add(key)
                    self._report(frame, accumulation)
                else:
                    self._held[key] = now

    def _marker(self, value: Any, kind: str) -> Any:
        """What identifies the accumulator's state now: a total's node, a list's last tensor."""
        if kind == "append":
            last = value[-1] if isinstance(value, list) and value else None
            return last if isinstance(last, torch.Tensor) and last.grad_fn is not None else None
        return value.grad_fn if isinstance(value, torch.Tensor) else None

    def _spans(self, value: Any, now: Any, previous: Any, kind: str) -> bool:
        """The accumulator still holds the previous step's history."""
        if kind == "append":
            return any(item is previous for item in value[-self.LIST_TAIL:])
        return reaches(now, previous)

    def _report(self, frame: FrameType, accumulation: Accumulation) -> None:
        at = (frame.f_code.co_filename, accumulation.line)
        value = accumulation.value
        simple = value.replace(".", "").replace("_", "").isalnum()
        term = value if simple else f"({value})"
        target, statement = accumulation.target, accumulation.statement
        if accumulation.kind == "append":
            variant, fields = "append", {"statement": statement, "value": value, "target": target, "term": term}
        elif accumulation.kind == "sum":
            variant, fields = "sum", {"statement": statement, "target": target, "term": term}
        elif accumulation.kind == "augmented" and not simple:
            variant, fields = "expression", {"target": target, "value": value, "term": term}
        else:
            variant, fields = None, {"target": target, "value": value}
        self.ctx.report(LOSS_HISTORY, at=at, key=target, variant=variant, fields=fields)


# --- retained graphs ----------------------------------------------------------------------


@dataclass
class Retained:
    """A backward(retain_graph=True) call site."""

    location: Location | None
    calls: int = 0
    unused: int = 0


@dataclass(frozen=True)
class Pending:
    """A retaining backward() waiting for the next one: does that one use its graph?"""

    site: Retained
    root: int  # the newest root's sequence number: the retained graph's nodes are not newer
    grad_calls: int


class RetainedGraphs(Detector):
    """TD148: `backward(retain_graph=True)` every step when the next backward() never uses
    the retained graph, or when each step's backward() reaches further back into earlier
    steps' graphs (history carried across steps).

    Autograd numbers the nodes it creates in order (`_sequence_nr`), so "this backward reaches
    a node older than that one" needs no reference to the old graph. The graphs are walked
    during the first steps only.
    """

    ORDER = 290
    rules = (RETAIN_GRAPH,)
    #: optimizer steps (of each optimizer) during which backward graphs are walked
    WINDOW = 6
    #: nodes visited at most per walk
    MAX_NODES = 100_000

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._sites: dict[Location | None, Retained] = {}
        self._grad_calls: GradCalls | None = None
        self._pending: Pending | None = None
        #: per optimizer: the newest backward root's sequence number before its last step
        self._marker: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        #: per optimizer: nodes older than its marker reached by the backward passes since its last step
        self._old: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._history: weakref.WeakKeyDictionary[Any, list[int]] = weakref.WeakKeyDictionary()
        self._newest_root = -1
        self._retained_since_step: Retained | None = None
        self._reported: set[Location | None] = set()
        #: whether backward graphs are still walked (until every optimizer has taken WINDOW steps)
        self._walking = True

    def install(self) -> None:
        self._grad_calls = self.ctx.instrument(GradCalls)

    def on_backward(self, event: Backward) -> None:
        site = self._site() if event.retain_graph else None
        if site is not None:
            site.calls += 1
            self._retained_since_step = site
        if not self._walking:
            self._pending = None
            return
        roots = backward_roots(event.tensors)
        if not roots:
            return
        sequences = graph_sequences(roots, self.MAX_NODES)
        oldest = min(sequences, default=None)
        self._judge_pending(oldest)
        for optimizer, marker in list(self._marker.items()):
            self._old[optimizer] = self._old.get(optimizer, 0) + sum(1 for n in sequences if n <= marker)
        newest = max(r._sequence_nr() for r in roots)
        self._newest_root = max(self._newest_root, newest)
        if site is not None:
            self._pending = Pending(site, newest, self._grad_count())

    def on_step(self, event: Step) -> None:
        if not self._walking:
            return
        if event.index > self.WINDOW:
            self._walking = any(info.steps < self.WINDOW for info in self.ctx.optimizers.known.values())
        optimizer = event.optimizer
        if optimizer in self._marker:
            history = self._history.setdefault(optimizer, [])
            history.append(self._old.get(optimizer, 0))
            site = self._retained_since_step
            if site is not None and _growing(history[-3:]):
                self._report(site, growing=True)
        self._old[optimizer] = 0
        if self._newest_root >= 0:
            self._marker[optimizer] = self._newest_root
        self._retained_since_step = None

    def _site(self) -> Retained:
        location = caller_in_user_code()
        site = self._sites.get(location)
        if site is None:
            site = self._sites[location] = Retained(location)
        return site

    def _grad_count(self) -> int:
        return self._grad_calls.calls if self._grad_calls is not None else 0

    def _judge_pending(self, oldest: int | None) -> None:
        """The previous backward retained its graph: this one reaches no node of it (none as
        old as its root), and no autograd.grad() ran in between: nothing used it."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        used = (oldest is not None and oldest <= pending.root) or self._grad_count() != pending.grad_calls
        if not used:
            pending.site.unused += 1
            if pending.site.unused >= 2:
                self._report(pending.site, growing=False)

    def _report(self, site: Retained, growing: bool) -> None:
        if site.location in self._reported:
            return
        self._reported.add(site.location)
        self.ctx.report(RETAIN_GRAPH, at=site.location, key="retain", variant=None if growing else "unused",
                        evidence={"retaining_calls": site.calls})


def _growing(counts: list[int]) -> bool:
    return len(counts) == 3 and 0 < counts[0] < counts[1] < counts[2]
