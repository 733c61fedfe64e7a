"""Per-step series of a training run: loss, learning rates, gradient norm and update-to-weight
ratio per layer, and where the step's time goes, for the report's curves (`series` in the JSON
report, drawn by the HTML report, written to TensorBoard by `run --tensorboard`).

The recorder reads only what the session already sees: the tensor handed to `backward()`,
the optimizers' param groups at their steps, the gradient norms the NaN and growth checks
already compute once per step (`GradNorms`: one fused norm, CPU parameters), and the times
of the events (a batch fetched, backward() called and returned, a step taken). It reports no
finding and changes nothing: values are read, never written; the update-to-weight ratio
copies the parameters before a sampled step and compares after it.

Cost stays bounded in long runs: each table keeps at most `capacity` rows; when full, every
other row goes and the table samples half as often (`Table.stride` doubles), so work per step
falls as the run gets longer. On a GPU, loss values are kept as device scalars and read once
at the end (never a sync per step); the per-layer series are recorded for CPU parameters only.

The clock is the optimizer step: the steps of the first optimizer that steps (a GAN's two
optimizers share it); without any optimizer, each backward() is a step.
"""

from __future__ import annotations

import math
import time
import weakref
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import torch
from torch.optim.optimizer import Optimizer

from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Backward, Batch, Step
from torchdoctor.observe.instruments.clipping import GradientClipping
from torchdoctor.observe.instruments.grad_norms import GradNorms
from torchdoctor.observe.instruments.optim import params_of
from torchdoctor.observe.instruments.tables import CURVE_ROWS, Table
from torchdoctor.observe.outcome import Outcome

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Instruments, Observed

#: rows kept per per-layer table (heatmaps) before decimating
LAYER_ROWS = 256
#: the update-to-weight ratio copies the parameters: sampled every 4th step at first, and kept
#: to fewer rows, so that its copies (a whole model's worth each) come ever more sparsely: about
#: UPDATE_ROWS / 2 per doubling of the run, not one per UPDATE_STRIDE steps
UPDATE_STRIDE = 4
UPDATE_ROWS = 32
#: the parts of a step's wall time, in the order they are stacked
TIME_PARTS = ("data", "forward", "backward", "optimizer", "other")
#: backward() calls without any optimizer after which each backward() is a step (an optimizer
#: created before `watch()` is known only at its first step; the first losses go to the first point)
MANUAL_AFTER = 8
#: under `torchdoctor run`, the series are written to the run's records at steps 64, 256, 1024, ...
#: (and at the end), so that an abrupt end keeps them
FIRST_FLUSH, FLUSH_GROWTH = 64, 4

perf_counter = time.perf_counter


def unscaled_loss(ctx: Instruments, loss: Any) -> torch.Tensor | None:
    """The loss handed to backward(), detached, as the user's loss function made it (a GradScaler's
    scale divided out); None when it is not one floating-point value."""
    if not isinstance(loss, torch.Tensor) or not loss.is_floating_point() or loss.numel() != 1:
        return None
    value = loss.detach()
    clipping = ctx.installed(GradientClipping)
    if clipping is not None and clipping.scaler.is_scaled(loss):
        scale = clipping.scaler.scale_of(loss)
        if not isinstance(scale, torch.Tensor) or scale.numel() != 1:
            return None
        value = value / scale
    return value


class SeriesRecorder(Detector):
    """Records the per-step series (see the module doc); `ctx.series` in the session.

    Other instruments add their own series with `table(name, ...)` and `step` (the memory
    account: `ctx.series.table("memory", unit="bytes", kind="stacked").add(ctx.series.step + 1, {...})`)."""

    rules = ()

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self.tables: dict[str, Table] = {}
        self.loss = self.table("loss", title="loss")
        self.lr = self.table("lr", title="learning rate")
        self.grad_norm = self.table("grad_norm", kind="heatmap", capacity=LAYER_ROWS, title="gradient norm per layer")
        self.update_ratio = self.table(
            "update_ratio", kind="heatmap", capacity=UPDATE_ROWS, stride=UPDATE_STRIDE, title="update / weight per layer"
        )
        self.step_time = self.table("step_time", unit="s", kind="stacked", title="step time")
        #: the optimizer whose steps are the clock, and how many it made
        self._primary: weakref.ref[Optimizer] | None = None
        self.step = 0
        self._labels: weakref.WeakKeyDictionary[Optimizer, str] = weakref.WeakKeyDictionary()
        self._layers: dict[int, tuple[weakref.ref[torch.Tensor], str]] = {}
        self._layouts: dict[tuple[int, ...], tuple[Any, Any, list[str], list[int]]] = {}
        self._loss_total: Any = 0.0
        self._loss_count = 0
        self._before: dict[int, tuple[list[torch.Tensor], list[torch.Tensor]]] = {}
        # times: the period since the last clock tick, split into parts
        self._period_start: float | None = None
        self._mark: float | None = None  # the end of the last fetch, backward or step
        self._parts = dict.fromkeys(TIME_PARTS, 0.0)
        self._backward_started = 0.0
        #: id(optimizer) -> (when its step started, forward + backward time until then)
        self._step_started: dict[int, tuple[float, float]] = {}
        self._flush_at = FIRST_FLUSH

    def table(self, name: str, *, unit: str = "", kind: str = "line", capacity: int = CURVE_ROWS, stride: int = 1,
              title: str = "") -> Table:
        """The table `name`, created on first use."""
        found = self.tables.get(name)
        if found is None:
            found = self.tables[name] = Table(unit=unit, kind=kind, capacity=capacity, stride=stride, title=title)
        return found

    def install(self) -> None:
        self.ctx.instrument(GradNorms)

    def snapshot(self, read_device: bool = False) -> dict[str, Any]:
        """The series as the JSON report holds them (tables with no row are left out)."""
        return {name: table.to_dict(read_device) for name, table in self.tables.items() if table.rows}

    # -- the clock ------------------------------------------------------------------------------

    def _is_primary(self, optimizer: Optimizer) -> bool:
        if self._primary is None or self._primary() is None:
            self._primary = weakref.ref(optimizer)
        return self._primary() is optimizer

    def _step_of(self, optimizer: Optimizer) -> int:
        """The step an optimizer's step belongs to: the clock's next for the primary optimizer,
        the clock's current one for the others (they step after it in the same iteration)."""
        return self.step + 1 if self._is_primary(optimizer) else max(self.step, 1)

    def _tick(self, now: float) -> None:
        """A step is over: write its loss and times, start the next period."""
        self.step += 1
        step = self.step
        if self._loss_count and self.loss.due(step):
            self.loss.add(step, {"loss": self._loss_total / self._loss_count})
        self._loss_total, self._loss_count = 0.0, 0
        if self._period_start is not None and self.step_time.due(step):
            total = now - self._period_start
            parts = dict(self._parts)
            parts["other"] = max(total - sum(parts.values()), 0.0)
            self.step_time.add(step, parts)
        self._parts = dict.fromkeys(TIME_PARTS, 0.0)
        self._period_start = self._mark = now
        if step >= self._flush_at and self.ctx.folder is not None:  # under `torchdoctor run` only
            self._flush_at *= FLUSH_GROWTH
            self.ctx.record({"type": "series", "series": self.snapshot()})

    # -- events -----------------------------------------------------------------------------------

    def on_batch(self, event: Batch) -> None:
        fetched = self.ctx.loaders.last_fetch
        if fetched is None:
            return
        started, ended = fetched
        self._parts["data"] += ended - started
        if self._period_start is None:
            self._period_start = started
        self._mark = ended

    def on_backward(self, event: Backward) -> None:
        now = perf_counter()
        if self._mark is not None:
            self._parts["forward"] += now - self._mark
        self._backward_started = now
        if event.tensors and self.loss.due(self.step + 1):
            self._add_loss(event.tensors[0])

    def on_backward_end(self, event: Backward) -> None:
        now = perf_counter()
        self._parts["backward"] += now - self._backward_started
        self._mark = now
        if self._primary is None and not self.ctx.optimizers.known and self.ctx.backward.completed >= MANUAL_AFTER:
            self._tick(now)  # weights updated by hand: each backward() is a step

    def on_step(self, event: Step) -> None:
        self._step_started[id(event.optimizer)] = (perf_counter(), self._parts["forward"] + self._parts["backward"])
        step = self._step_of(event.optimizer)
        if self.grad_norm.due(step) and not event.closure:
            self._grad_norms(event, step, self.ctx.instrument(GradNorms).at_step(event.optimizer, event.index))
        if self.update_ratio.due(step):
            self._before_update(event.optimizer)

    def on_step_end(self, event: Step) -> None:
        now = perf_counter()
        started = self._step_started.pop(id(event.optimizer), None)
        if started is not None:  # a closure's forward and backward ran inside the step: theirs, not the optimizer's
            inside = self._parts["forward"] + self._parts["backward"] - started[1]
            self._parts["optimizer"] += max(now - started[0] - inside, 0.0)
        self._mark = now
        optimizer = event.optimizer
        step = self._step_of(optimizer)
        if event.closure and self.grad_norm.due(step):  # the gradients the closure made, still there
            self._grad_norms(event, step, self.ctx.instrument(GradNorms).now(optimizer))
        if id(optimizer) in self._before:
            self._after_update(optimizer, step)
        if self.lr.due(step):
            self.lr.add(step, dict(self._learning_rates(optimizer)))
        if self._is_primary(optimizer):
            self._tick(now)

    def on_finish(self, outcome: Outcome) -> None:
        self.ctx.record({"type": "series", "series": self.snapshot(read_device=True), "final": True})

    # -- what is read -------------------------------------------------------------------------------

    def _add_loss(self, loss: Any) -> None:
        value = unscaled_loss(self.ctx, loss)
        if value is None:
            return
        if value.device.type == "cpu":
            self._loss_total += float(value)
        else:  # summed on the device and read at the end: never a sync per step
            self._loss_total = value.float().reshape(()) + self._loss_total
        self._loss_count += 1

    def _label(self, optimizer: Optimizer) -> str:
        label = self._labels.get(optimizer)
        if label is None:
            name = type(optimizer).__name__
            taken = sum(1 for known in self._labels.values() if known.split(" #")[0] == name)
            label = self._labels[optimizer] = f"{name} #{taken + 1}" if taken else name
        return label

    def _learning_rates(self, optimizer: Optimizer) -> Iterable[tuple[str, float]]:
        label = self._label(optimizer)
        groups = optimizer.param_groups
        for i, group in enumerate(groups):
            lr = group.get("lr")
            if isinstance(lr, torch.Tensor):
                if lr.device.type != "cpu" or lr.numel() != 1:
                    continue
                lr = float(lr)
            if isinstance(lr, (int, float)):
                yield (f"{label} group {i}" if len(groups) > 1 else label), float(lr)

    def _layer(self, param: torch.Tensor) -> str:
        """The module a parameter belongs to (`encoder.fc1`; `0 (Linear)` for an index; the model's
        class for its own parameters), after its model's name when several models train."""
        known = self._layers.get(id(param))
        if known is None or known[0]() is not param:
            self._index_layers()
            known = self._layers.get(id(param))
            if known is None or known[0]() is not param:  # in no model seen running
                known = self._layers[id(param)] = (weakref.ref(param), f"parameter {tuple(param.shape)}")
        return known[1]

    def _index_layers(self) -> None:
        roots = self.ctx.model_roots()
        kinds = Counter(type(root).__name__ for root in roots)
        seen: Counter[str] = Counter()
        for root in roots:
            kind = type(root).__name__
            seen[kind] += 1
            model = kind if kinds[kind] == 1 else f"{kind} #{seen[kind]}"
            for module in root.modules():
                own = list(module.parameters(recurse=False))
                if not own:
                    continue
                path = "" if module is root else self.ctx.modules.name_of(module)
                if path.rpartition(".")[2].isdigit():  # `0`, `blocks.3`: the index alone says little
                    path = f"{path} ({type(module).__name__})"
                label = (f"{model} · {path}" if len(roots) > 1 else path) if path else model
                for param in own:
                    self._layers[id(param)] = (weakref.ref(param), label)

    def _per_layer(self, params: list[torch.Tensor], norms: torch.Tensor) -> dict[str, float]:
        """The norm of each layer's parameters together (the root of the sum of their squared norms)."""
        labels, index = self._layout(params)
        totals = [0.0] * len(labels)
        for layer, norm in zip(index, norms.tolist()):  # a few Python adds cost less than torch calls here
            totals[layer] += norm * norm
        return {label: math.sqrt(total) for label, total in zip(labels, totals)}

    def _layout(self, params: list[torch.Tensor]) -> tuple[list[str], list[int]]:
        """(layer labels, the label index of each parameter), cached per list of parameters."""
        key = tuple(map(id, params))
        cached = self._layouts.get(key)
        if cached is not None and cached[0]() is params[0] and cached[1]() is params[-1]:
            return cached[2], cached[3]
        labels: dict[str, int] = {}
        index = [labels.setdefault(self._layer(p), len(labels)) for p in params]
        if len(self._layouts) > 64:  # optimizers that change their parameters every step: keep it bounded
            self._layouts.clear()
        self._layouts[key] = (weakref.ref(params[0]), weakref.ref(params[-1]), list(labels), index)
        return list(labels), index

    def _grad_norms(self, event: Step, step: int, measured: tuple[list[torch.Tensor], torch.Tensor] | None) -> None:
        if measured is not None:
            params, norms = measured
            self.grad_norm.add(step, self._per_layer(params, norms))

    def _before_update(self, optimizer: Optimizer) -> None:
        params = [p for p in params_of(optimizer) if p.grad is not None and p.is_floating_point()]
        if params and all(p.device.type == "cpu" and not p.is_sparse for p in params):
            self._before[id(optimizer)] = (params, [p.detach().clone() for p in params])

    def _after_update(self, optimizer: Optimizer, step: int) -> None:
        params, before = self._before.pop(id(optimizer))
        after = [p.detach() for p in params]
        updates = torch.stack(torch._foreach_norm(torch._foreach_sub(after, before))).float()
        weights = torch.stack(torch._foreach_norm(after)).float()
        update, weight = self._per_layer(params, updates), self._per_layer(params, weights)
        self.update_ratio.add(step, {layer: update[layer] / weight[layer] for layer in update if weight[layer] > 0})
