"""What several silent-bug detectors need to know about the run: the models an optimizer
trains (through DDP / DataParallel / torch.compile wrappers), sparse check schedules, the
first tensor of a module's output, and short texts for messages (built on the check
family's `listing`)."""

from __future__ import annotations

import linecache
import re
import weakref
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.optim.optimizer import Optimizer

from torchdoctor.core.locate import display_path
from torchdoctor.core.wording import listing as shortened
from torchdoctor.introspect.graph import graph_nodes
from torchdoctor.introspect.source import child_built_at
from torchdoctor.observe.events import Location
from torchdoctor.observe.instruments.optim import params_of

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: a check that needs to look at all parameters or modules runs on the first steps, then on
#: every EVERY-th step: a late change (layers frozen after a warm-up phase) is still seen
FIRST = 4
EVERY = 16
#: how many names a message lists before "..."
SHOWN = 3


#: elements of a parameter that stand for it where a detector compares it across steps
PARAM_SAMPLE = 4096


def param_sample(param: torch.Tensor) -> torch.Tensor:
    """The first PARAM_SAMPLE elements of a parameter, detached (a view where the storage allows)."""
    return param.detach().reshape(-1)[:PARAM_SAMPLE]


def due(step: int) -> bool:
    """Whether a periodic check runs at this (1-based) optimizer step."""
    return step <= FIRST or step % EVERY == 0


def unwrapped(module: nn.Module) -> nn.Module:
    """The user's model inside DDP / DataParallel / torch.compile wrappers."""
    for _ in range(4):
        inner = getattr(module, "_orig_mod", None) if type(module).__name__ == "OptimizedModule" else None
        if inner is None and isinstance(module, (nn.DataParallel, nn.parallel.DistributedDataParallel)):
            inner = module.module
        if not isinstance(inner, nn.Module):
            return module
        module = inner
    return module


class TrainedModels:
    """The top-level models whose parameters each optimizer updates (cached; recomputed when
    new models appear)."""

    def __init__(self, ctx: Observed) -> None:
        self.ctx = ctx
        self._cache: weakref.WeakKeyDictionary[Optimizer, tuple[int, list[weakref.ref[nn.Module]]]] = weakref.WeakKeyDictionary()

    def of(self, optimizer: Optimizer) -> list[nn.Module]:
        known = len(self.ctx.modules.roots)
        cached = self._cache.get(optimizer)
        if cached is None or cached[0] != known:
            params = {id(p) for p in params_of(optimizer)}
            models = [root for root in self.ctx.model_roots() if any(id(p) in params for p in root.parameters())]
            cached = (known, [weakref.ref(m) for m in models])
            self._cache[optimizer] = cached
        return [model for model in (ref() for ref in cached[1]) if model is not None]


def first_tensor(value: Any, depth: int = 2) -> torch.Tensor | None:
    """The first tensor in a module's output (a tensor, a tuple/list, a dict, a dataclass-like)."""
    if isinstance(value, torch.Tensor):
        return value
    if depth <= 0:
        return None
    if isinstance(value, dict):
        items: Any = value.values()
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return None
    for item in items:
        found = first_tensor(item, depth - 1)
        if found is not None:
            return found
    return None


def listing(names: list[str]) -> str:
    """`a`, `b`, `c` and 4 more."""
    return shortened([f"`{name}`" for name in names], SHOWN)


def place(location: Location | None) -> str:
    """`train.py:42` (relative to the working directory), or "" when unknown."""
    return f"{display_path(location[0])}:{location[1]}" if location else ""


def source_call(location: Location | None, pattern: str) -> str | None:
    """The text of the call matching `pattern` on the user's line (e.g. `F.dropout(h, p=0.5)`)."""
    if location is None:
        return None
    text = linecache.getline(location[0], location[1])
    match = re.search(pattern + r"\([^()]*(?:\([^()]*\)[^()]*)*\)", text)
    return match.group(0) if match else None


#: autograd nodes that stand for leaves (a parameter's gradient accumulator): created once, old
LEAF_SEQUENCE = 2**63


def graph_sequences(roots: list[Any], max_nodes: int = 100_000) -> list[int]:
    """The creation numbers (`_sequence_nr`, in the order autograd made them) of the nodes of
    the graph below `roots`, leaves' gradient accumulators excepted."""
    return [number for node in graph_nodes(roots, max_nodes) if (number := node._sequence_nr()) < LEAF_SEQUENCE]


def backward_roots(tensors: tuple[Any, ...]) -> list[Any]:
    """The autograd nodes a backward() call starts from."""
    return [t.grad_fn for t in tensors if isinstance(t, torch.Tensor) and t.grad_fn is not None]


def built_at(roots: list[nn.Module], module: nn.Module) -> Location | None:
    """The line of the user's `__init__` that built `module`, or the container that holds it
    (`self.net = nn.Sequential(..., nn.ReLU(), ...)`): the nearest ancestor the user's own class
    assigns. None for a layer of a model built outside any user class."""
    for root in roots:
        parents = {id(child): parent for parent in root.modules() for child in parent.children()}
        child = module
        while id(child) in parents:
            parent = parents[id(child)]
            found = child_built_at(parent, child)
            if found is not None:
                return found
            child = parent
    return None



def setting(key: str, env: str, default: float | str | None) -> Any:
    """A setting the runner passed (the run folder's config.json, from a `torchdoctor run` option),
    else the environment variable `env` (also read under `torchdoctor.watch()`), else `default`."""
    import os

    from torchdoctor.run import boot

    value = boot.config().get(key)
    if value is None:
        value = os.environ.get(env) or None
    if value is None:
        return default
    if isinstance(default, float):
        try:
            return float(value)
        except (TypeError, ValueError):
            return default
    return str(value)


#: how many parameter names `names_text` lists before "..."
NAMES_SHOWN = 6


def names_text(names: list[str]) -> str:
    """Parameter names for a message: the first NAMES_SHOWN, then how many more."""
    shown = ", ".join(names[:NAMES_SHOWN])
    return shown + (f", ... ({len(names) - NAMES_SHOWN} more)" if len(names) > NAMES_SHOWN else "")
