"""backward() calls, and what happens to each parameter's gradient between optimizer steps.

`torch.autograd.backward` (which `Tensor.backward` calls) gets an observing stand-in: it is
called once per training step, so it is where the cheap per-step checks live. During
warm-up a tensor hook on each optimized parameter sees every gradient arrive *before* it
is accumulated into `.grad`, which is the one moment that tells a reset gradient from one
left over from the previous step.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch

from torchdoctor.introspect.graph import accumulators
from torchdoctor.observe.events import Backward
from torchdoctor.observe.faults import FAULTS, contain, passes_through
from torchdoctor.observe.instruments.compiled import traced
from torchdoctor.observe.patching import Patches


class BackwardWatch:
    """Counts backward() calls and tells the session before and after each one."""

    def __init__(self, before: Callable[[Backward], None], after: Callable[[Backward], None]) -> None:
        self.calls = 0
        self.completed = 0
        #: the call in progress, kept when it raises (crash explanations read its tensors)
        self.current: Backward | None = None
        self._before = before
        self._after = after

    def install(self, patches: Patches) -> None:
        original = torch.autograd.backward
        watch = self

        @passes_through
        def backward(*args: Any, **kwargs: Any) -> Any:
            if traced():
                return original(*args, **kwargs)
            event = watch._start(args, kwargs)
            result = original(*args, **kwargs)
            watch._end(event)
            return result

        backward.__wrapped__ = original  # type: ignore[attr-defined]
        backward.__doc__ = original.__doc__
        patches.set(torch.autograd, "backward", backward)

    def _start(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Backward | None:
        try:
            tensors = args[0] if args else kwargs.get("tensors")
            tensors = (tensors,) if isinstance(tensors, torch.Tensor) else tuple(tensors or ())
            retain = kwargs.get("retain_graph", args[2] if len(args) > 2 else None)
            create = kwargs.get("create_graph", args[3] if len(args) > 3 else False)
            self.calls += 1
            event = Backward(tensors=tensors, retain_graph=retain, create_graph=bool(create), index=self.calls)
            self.current = event
            self._before(event)
            return event
        except Exception as exc:  # noqa: BLE001 - observing must never stop backward()
            FAULTS.add("the backward() observer", exc)
            return None

    def _end(self, event: Backward | None) -> None:
        if event is None:
            return
        self.completed += 1
        self.current = None
        try:
            self._after(event)
        except Exception as exc:  # noqa: BLE001 - same as above
            FAULTS.add("the backward() observer", exc)


@dataclass
class GradRecord:
    """One parameter's gradient since its optimizer's last step."""

    ref_at_step: weakref.ref[torch.Tensor] | None = None  # `.grad` right after that step
    arrivals: int = 0  # gradients that reached the parameter since then
    carried: bool = False  # the first arrival found that step's gradient still in `.grad`


class GradTracker:
    """Sees the gradients of optimized parameters arrive (warm-up only).

    At each backward() a pre-hook goes on the gradient accumulator of each tracked parameter
    in that call's graph: it runs before the gradient is added to `.grad`. The hooks live on
    the graph's nodes, which the graph owns, never on the parameters: a hook in a tensor's
    `_backward_hooks` would show in it, and `torch.save` would warn about it.
    """

    def __init__(self) -> None:
        self.records: dict[int, GradRecord] = {}
        self._tracked: dict[int, weakref.ref[torch.Tensor]] = {}
        self._hooks: list[Any] = []

    def track(self, params: Iterable[torch.Tensor]) -> None:
        for param in params:
            key = id(param)
            if key in self._tracked or not param.requires_grad or param.grad_fn is not None:
                continue
            self.records[key] = GradRecord()
            self._tracked[key] = weakref.ref(param)

    def attach(self, roots: Iterable[Any]) -> None:
        """A backward() starts from these graph nodes: hook the accumulators of tracked parameters."""
        self._remove_hooks()
        if not self._tracked:
            return
        for node, variable in accumulators(roots):
            key = id(variable)
            ref = self._tracked.get(key)
            if ref is not None and ref() is variable:
                self._hooks.append(node.register_prehook(contain("the gradient observer", self._hook(key, ref))))

    def record(self, param: torch.Tensor) -> GradRecord | None:
        return self.records.get(id(param))

    def stepped(self, params: Iterable[torch.Tensor]) -> None:
        """The optimizer holding `params` has stepped: a new interval starts."""
        for param in params:
            record = self.records.get(id(param))
            if record is not None:
                grad = param.grad
                record.ref_at_step = weakref.ref(grad) if grad is not None else None
                record.arrivals = 0
                record.carried = False

    def reset(self, params: Iterable[torch.Tensor]) -> None:
        """A zero_grad() covering `params` ran: whatever was carried over is gone."""
        for param in params:
            record = self.records.get(id(param))
            if record is not None:
                record.carried = False

    def stop(self) -> None:
        self._remove_hooks()
        self._tracked.clear()

    def _remove_hooks(self) -> None:
        for handle in self._hooks:
            handle.remove()
        self._hooks = []

    def _hook(self, key: int, ref: weakref.ref[torch.Tensor]) -> Callable[[Any], None]:
        records = self.records

        def arrived(incoming: tuple[torch.Tensor | None, ...]) -> None:
            record = records.get(key)
            param = ref()
            if record is None or param is None or all(grad is None for grad in incoming):
                return  # no gradient: a compiled graph's backward reaches every input, with None for some
            grad = param.grad  # the value before this gradient is added to it
            same = grad is not None and record.ref_at_step is not None and record.ref_at_step() is grad
            if record.arrivals == 0:
                record.carried = same and _nonzero(grad)
            elif record.carried and not (same and _nonzero(grad)):
                record.carried = False  # reset between two backward passes of the interval
            record.arrivals += 1

        return arrived


def _nonzero(tensor: torch.Tensor | None) -> bool:
    """Warm-up only: this reads a value back from the device."""
    if tensor is None:
        return False
    try:
        return bool(tensor.any())
    except Exception:  # noqa: BLE001 - sparse, meta or exotic tensors: cannot tell, say no
        return False
