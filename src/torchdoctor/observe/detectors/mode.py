"""train()/eval() mistakes, seen while the script runs.

TD131: an optimizer steps while the model it trains is in eval mode (dropout off, batch-norm
frozen), usually after a validation that called `model.eval()` and nothing switched back.
TD130: functional dropout without `training=` still drops activations in eval mode.
TD132: batch-norm layers whose weights are frozen still update their running statistics.
TD161: forward passes in eval mode with autograd on, and no backward() afterwards.
TD133: an evaluation (several no-grad forward passes, no step; or one after each round of
training steps, again and again) of a trained model left in train mode.

Per step this costs a few attribute reads (the models' `training` flags); the scans over
modules run on a sparse schedule (`support.due`), and eval-mode forward passes are watched
with one hook on the evaluated model only while it is in eval mode.
"""

from __future__ import annotations

import sys
import weakref
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.modules.dropout import _DropoutNd

from torchdoctor.core.locate import caller_in_user_code, is_user_file, user_frame
from torchdoctor.introspect.source import after_training, evaluation_site, module_tree, training_site
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Backward, Location, Step
from torchdoctor.observe.instruments.compiled import traced
from torchdoctor.observe.instruments.dropout import FunctionalDropout
from torchdoctor.observe.instruments.grad_calls import GradCalls
from torchdoctor.observe.instruments.modes import ModeSwitch, ModeSwitches
from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.support import (
    TrainedModels,
    backward_roots,
    due,
    first_tensor,
    graph_sequences,
    listing,
    place,
    source_call,
    unwrapped,
)
from torchdoctor.rules.memory.evaluation_with_grad import RULE as EVAL_WITH_GRAD
from torchdoctor.rules.mode.evaluation_in_train_mode import RULE as EVAL_IN_TRAIN_MODE
from torchdoctor.rules.mode.evaluation_in_train_mode import train_mode_effects
from torchdoctor.rules.mode.frozen_batchnorm_drift import RULE as BATCHNORM_DRIFT
from torchdoctor.rules.mode.functional_dropout_ignores_eval import RULE as FUNCTIONAL_DROPOUT
from torchdoctor.rules.mode.training_in_eval_mode import RULE as TRAINING_IN_EVAL

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: how many user frames up from a dropout call the module whose forward made it is looked for
MODULE_FRAMES = 4
#: user frames read, from a lone no-grad forward outwards, to find the loop that trains
CALLER_FRAMES = 6


def mode_dependent(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The modules of `model` that behave differently in train and eval mode, and train:
    dropout with p > 0, attention with dropout, batch-norm with trainable weights (a frozen
    batch-norm kept in eval mode on purpose is not one of them)."""
    found: list[tuple[str, nn.Module]] = []
    for name, module in model.named_modules():
        if isinstance(module, _DropoutNd) and module.p > 0:
            found.append((name, module))
        elif isinstance(module, nn.MultiheadAttention) and module.dropout > 0:
            found.append((name, module))
        elif isinstance(module, _BatchNorm) and any(p.requires_grad for p in module.parameters(recurse=False)):
            found.append((name, module))
    return found


class EvalModeTraining(Detector):
    """TD131: `optimizer.step()` while dropout / batch-norm of the trained model are in eval mode."""

    ORDER = 190
    rules = (TRAINING_IN_EVAL,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._models = TrainedModels(ctx)
        self._dependent: weakref.WeakKeyDictionary[nn.Module, list[tuple[str, weakref.ref[nn.Module]]]] = weakref.WeakKeyDictionary()
        self._reported: dict[int, dict[str, Any]] = {}
        self._switches: ModeSwitches | None = None

    def install(self) -> None:
        self._switches = self.ctx.instrument(ModeSwitches)

    def on_step(self, event: Step) -> None:
        for model in self._models.of(event.optimizer):
            inner = unwrapped(model)
            if model.training and inner.training:
                continue
            self._check(inner, model)

    def _check(self, model: nn.Module, wrapper: nn.Module) -> None:
        known = self._reported.get(id(model))
        if known is not None:
            self.ctx.report(TRAINING_IN_EVAL, **known)
            return
        dependent = self._dependent.get(model)
        if dependent is None:
            dependent = [(name, weakref.ref(m)) for name, m in mode_dependent(model)]
            self._dependent[model] = dependent
        in_eval = [name or type(model).__name__ for name, ref in dependent if (m := ref()) is not None and not m.training]
        if not in_eval:
            return
        step_line = caller_in_user_code()
        switch = None
        if self._switches is not None:
            switch = self._switches.last.get(model) or self._switches.last.get(wrapper)
        kind = type(model).__name__
        if switch is not None and not switch.training and switch.location is not None:
            at: Location | None = switch.location
            call = source_call(at, r"[\w.\[\]]*\.(?:eval|train)") or f"{kind}.eval()"
            site = _training_site(step_line, switch.location)
            where = f"`{call}`{f' at {place(at)}' if site else ''} is not undone before `optimizer.step()` at {place(step_line)}"
            at = site or at
        else:
            at = step_line
            where = f"`optimizer.step()` trains {kind}"
        fields: dict[str, Any] = {"at": at, "key": id(model), "fields": {"where": where}, "evidence": {"modules_in_eval_mode": in_eval[:10]}}
        self._reported[id(model)] = fields
        self.ctx.report(TRAINING_IN_EVAL, **fields)


class DropoutInEval(Detector):
    """TD130: `F.dropout(x, p)` without `training=` called from a module in eval mode."""

    ORDER = 200
    rules = (FUNCTIONAL_DROPOUT,)

    def install(self) -> None:
        self.ctx.instrument(FunctionalDropout).listen(self._called)

    def _called(self, function: str, p: float, frame: FrameType) -> None:
        if p <= 0 or not is_user_file(frame.f_code.co_filename):
            return
        module = _calling_module(frame)
        if module is None or module.training:
            return
        at = (frame.f_code.co_filename, frame.f_lineno)
        call = source_call(at, r"[\w.]*\b" + function) or f"F.{function}(...)"
        self.ctx.report(FUNCTIONAL_DROPOUT, at=at, fields={"call": call}, evidence={"module": type(module).__name__})


def _calling_module(frame: FrameType | None) -> nn.Module | None:
    """The module whose method (forward, or a helper it calls) is running in `frame` or above."""
    for _ in range(MODULE_FRAMES):
        if frame is None or not is_user_file(frame.f_code.co_filename):
            return None
        owner = frame.f_locals.get("self")
        if isinstance(owner, nn.Module):
            return owner
        frame = frame.f_back
    return None


class FrozenBatchNormDrift(Detector):
    """TD132: batch-norm layers with all weights frozen whose running statistics keep changing."""

    ORDER = 210
    rules = (BATCHNORM_DRIFT,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._models = TrainedModels(ctx)
        self._versions: weakref.WeakKeyDictionary[nn.Module, int] = weakref.WeakKeyDictionary()
        self._reported: set[int] = set()
        self._switches: ModeSwitches | None = None

    def install(self) -> None:
        self._switches = self.ctx.instrument(ModeSwitches)

    def on_step_end(self, event: Step) -> None:
        if not due(event.index):
            return
        for model in [*self._models.of(event.optimizer), *self._untrained_roots()]:
            if id(model) not in self._reported:
                drifting = self._drifting(model)
                if drifting:
                    self._report(model, drifting)

    def _untrained_roots(self) -> list[nn.Module]:
        """Models no optimizer updates (a frozen feature extractor, a distillation teacher): run in
        train mode during training, their batch-norm statistics drift too. A model that some
        optimizer trains (a GAN's discriminator, frozen only during the generator's step) is
        judged at its own optimizer's steps instead."""
        trained = self.ctx.optimizers.optimized()
        return [root for root in self.ctx.model_roots() if not any(id(p) in trained for p in root.parameters())]

    def _drifting(self, model: nn.Module) -> list[str]:
        """Frozen batch-norm layers in train mode whose statistics changed since the last look
        (`num_batches_tracked` is incremented in place by every train-mode forward)."""
        found = []
        for name, module in model.named_modules():
            if not isinstance(module, _BatchNorm) or not module.training or module.num_batches_tracked is None:
                continue
            weights = list(module.parameters(recurse=False))
            if not weights or any(p.requires_grad for p in weights):
                continue
            version = module.num_batches_tracked._version
            previous = self._versions.get(module)
            self._versions[module] = version
            if previous is not None and version != previous:
                found.append(self.ctx.modules.name_of(module) or name)
        return found

    def _report(self, model: nn.Module, names: list[str]) -> None:
        self._reported.add(id(model))
        inner = unwrapped(model)
        switch = None
        if self._switches is not None:
            switch = self._switches.last.get(inner) or self._switches.last.get(model)
        if switch is not None and switch.training and switch.location is not None:
            at: Location | bool = switch.location
        else:
            at = self.ctx.modules.roots.get(model) or True
        self.ctx.report(BATCHNORM_DRIFT, at=at, key=id(model), fields={"name": listing(names)},
                        evidence={"modules": names})


@dataclass
class NoGradCalls:
    """No-grad forward passes of a trained model in train mode since the last optimizer step."""

    steps: int = -1
    calls: int = 0
    #: where a forward came first after a step (file, line) -> at how many steps, last time
    firsts: dict[Location, int] = field(default_factory=dict)


class EvaluationInTrainMode(Detector):
    """TD133: a trained model with dropout or batch-norm evaluated (several no-grad forwards
    between two optimizer steps) while in train mode.

    A validation that is one forward pass (the whole validation set as one batch) is told
    apart from the no-grad forwards that training makes (pseudo-labels, a target, an action, a
    sample every few steps) by where it runs: the same line, after two different steps, and in
    the source after every backward() of the loop that trains (`source.after_training`).

    One forward pre-hook per trained model (a grad-mode read per call); the models are hooked
    at the steps of the sparse schedule, once they have been stepped. A script with no
    `torch.optim` optimizer updates its weights by hand: there the models backward() gave
    gradients are the trained ones, and backward() calls stand for the steps."""

    ORDER = 230
    rules = (EVAL_IN_TRAIN_MODE,)
    #: no-grad forwards between two steps that make an evaluation (one per step is a generated
    #: batch, pseudo-labels or a target network, used within training)
    MIN_FORWARDS = 3
    #: lines remembered per model for lone forwards
    MAX_FIRSTS = 32

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._models = TrainedModels(ctx)
        self._watched: dict[int, NoGradCalls] = {}
        self._handles: list[Any] = []
        self._train_switches: weakref.WeakKeyDictionary[nn.Module, int] = weakref.WeakKeyDictionary()

    def install(self) -> None:
        self.ctx.instrument(ModeSwitches).listen(self._switched)

    def _switched(self, switch: ModeSwitch) -> None:
        if switch.training:
            self._train_switches[switch.module] = self._steps()

    def _steps(self) -> int:
        """Optimizer steps so far; backward() calls where no optimizer exists (updates by hand)."""
        return self.ctx.steps if self.ctx.optimizers.known else self.ctx.backward.completed

    def on_step_end(self, event: Step) -> None:
        if due(event.index):
            for model in self._models.of(event.optimizer):
                self._watch(model)

    def on_backward_end(self, event: Backward) -> None:
        if self.ctx.optimizers.known or not due(event.index):
            return
        for model in self.ctx.model_roots():
            if id(model) not in self._watched and any(p.grad is not None for p in model.parameters()):
                self._watch(model)

    def _watch(self, model: nn.Module) -> None:
        if id(model) in self._watched:
            return
        self._watched[id(model)] = NoGradCalls()
        if any(isinstance(m, (_DropoutNd, _BatchNorm)) for m in model.modules()):
            self._handles.append(self.ctx.modules.watch(model, self._forward))

    def on_finish(self, outcome: Outcome) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _forward(self, module: nn.Module, _args: Any, _kwargs: Any, _output: Any) -> None:
        if torch.is_grad_enabled() or not module.training or traced():
            return
        watch = self._watched.get(id(module))
        if watch is None:
            return
        steps = self._steps()
        if watch.steps != steps:
            watch.steps, watch.calls = steps, 0
        watch.calls += 1
        if watch.calls == 1:
            self._first(module, watch, steps)
        elif watch.calls == self.MIN_FORWARDS and not self._switched_since_last_step(module, steps):
            self._report(module, caller_in_user_code(), watch.calls, steps)

    def _first(self, module: nn.Module, watch: NoGradCalls, steps: int) -> None:
        """The first no-grad forward since a step: an evaluation when the same line ran after an
        earlier step too, and runs after the training in its loop."""
        frame = user_frame(sys._getframe(2))
        if frame is None:
            return
        call = (frame.f_code.co_filename, frame.f_lineno)
        before = watch.firsts.get(call)
        if before is None and len(watch.firsts) >= self.MAX_FIRSTS:
            return
        watch.firsts[call] = steps
        if before is None or before == steps or self._switched_since_last_step(module, steps):
            return
        calls: list[tuple[CodeType, int]] = []
        while frame is not None and len(calls) < CALLER_FRAMES and is_user_file(frame.f_code.co_filename):
            calls.append((frame.f_code, frame.f_lineno))
            frame = frame.f_back
        if after_training(tuple(calls)):
            self._report(module, call, 1, steps)

    def _report(self, module: nn.Module, call: Location | None, forwards: int, steps: int) -> None:
        effects = _train_mode_effects(module)  # what is in train mode now (`model.module.eval()` in DDP)
        if not effects:
            return
        model = type(unwrapped(module)).__name__
        site = _evaluation_site(call)
        if site is not None and call is not None:
            model += f" (called at line {call[1]})"
        fields = {"model": model, "effects": effects}
        self.ctx.report(EVAL_IN_TRAIN_MODE, at=site or True, key=id(module), fields=fields,
                        variant="one-forward" if forwards == 1 else None,
                        evidence={"forward_passes": forwards, "steps": steps})

    def _switched_since_last_step(self, module: nn.Module, steps: int) -> bool:
        """`model.train()` called after the last optimizer step: train mode is meant here."""
        return any(self._train_switches.get(m) == steps for m in (module, unwrapped(module)))


def _train_mode_effects(model: nn.Module) -> str:
    """What the layers now in train mode change in this model's forward, in words ("" when nothing)."""
    dropout = any(isinstance(m, _DropoutNd) and m.p > 0 and m.training for m in model.modules())
    batchnorm = any(isinstance(m, _BatchNorm) and m.training for m in model.modules())
    return train_mode_effects(dropout, batchnorm)


@dataclass
class EvalPhase:
    """A model switched to eval mode, until it is switched back."""

    module: weakref.ref[nn.Module]
    handle: Any
    backward_calls: int
    grad_calls: int
    steps: int
    calls: int = 0
    graphs: int = 0
    outputs: list[int] = field(default_factory=list)  # creation numbers of the outputs' nodes
    judged: bool = False  # a backward() came: whether it used the graphs is settled
    location: Location | None = None
    function: str = ""

    def stop_watching(self) -> None:
        if self.handle is not None:
            self.handle.remove()
            self.handle = None


class EvalGraphs(Detector):
    """TD161: a model in eval mode runs with autograd on and no backward() follows."""

    ORDER = 220
    rules = (EVAL_WITH_GRAD,)
    #: graph-building eval forwards before it counts as an evaluation (one call is not a loop)
    MIN_FORWARDS = 2
    #: eval outputs remembered per phase (to tell whether a backward() used them)
    MAX_OUTPUTS = 256
    #: forward calls without a graph after which a model in eval mode is left alone (a teacher
    #: or a model evaluated under no_grad, used correctly)
    IDLE_CALLS = 64

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._phases: dict[int, EvalPhase] = {}
        self._grad_calls: GradCalls | None = None

    def install(self) -> None:
        self.ctx.instrument(ModeSwitches).listen(self._switched)
        self._grad_calls = self.ctx.instrument(GradCalls)

    def on_backward(self, event: Backward) -> None:
        """The first backward() after graph-building eval forwards: the outputs whose nodes
        are not in its graph were not used by it (the model may still be in eval mode,
        training by mistake: TD131 says so, and this finding stands on its own)."""
        pending = [p for p in self._phases.values() if p.graphs and not p.judged]
        if not pending:
            return
        grad_calls = self._grad_calls.calls if self._grad_calls else 0
        used = set(graph_sequences(backward_roots(event.tensors)))
        for phase in pending:
            phase.judged = True
            phase.stop_watching()
            unused = sum(1 for number in phase.outputs if number not in used)
            if phase.grad_calls == grad_calls and unused >= self.MIN_FORWARDS:
                self._report(phase, unused)

    def on_finish(self, outcome: Outcome) -> None:
        for key in list(self._phases):
            self._end(key)

    def _switched(self, switch: ModeSwitch) -> None:
        key = id(switch.module)
        if switch.training:
            ended = [
                key for key, phase in self._phases.items()
                if (module := phase.module()) is None or module is switch.module or _contains(switch.module, module)
            ]
            for other in ended:
                self._end(other)
            return
        if key in self._phases or not any(True for _ in switch.module.parameters()):
            return
        handle = self.ctx.modules.watch(switch.module, self._forward)
        self._phases[key] = EvalPhase(
            module=weakref.ref(switch.module), handle=handle, backward_calls=self.ctx.backward.calls,
            grad_calls=self._grad_calls.calls if self._grad_calls else 0, steps=self.ctx.steps,
        )

    def _forward(self, module: nn.Module, _args: Any, _kwargs: Any, output: Any) -> None:
        phase = self._phases.get(id(module))
        if phase is None or module.training or traced():
            return
        phase.calls += 1
        tensor = first_tensor(output) if torch.is_grad_enabled() else None
        if tensor is None or tensor.grad_fn is None:
            if phase.calls >= self.IDLE_CALLS and not phase.graphs:
                phase.stop_watching()
            return
        phase.graphs += 1
        if len(phase.outputs) < self.MAX_OUTPUTS:
            phase.outputs.append(tensor.grad_fn._sequence_nr())
        if phase.location is None:
            frame = _user_caller()
            if frame is not None:
                phase.location = (frame.f_code.co_filename, frame.f_lineno)
                phase.function = frame.f_code.co_name

    def _end(self, key: int) -> None:
        phase = self._phases.pop(key)
        phase.stop_watching()
        grad_calls = self._grad_calls.calls if self._grad_calls else 0
        used = phase.backward_calls != self.ctx.backward.calls or phase.grad_calls != grad_calls or phase.steps != self.ctx.steps
        if not used and not phase.judged:
            self._report(phase, phase.graphs)

    def _report(self, phase: EvalPhase, graphs: int) -> None:
        module = phase.module()
        if module is None or graphs < self.MIN_FORWARDS:
            return
        model = type(unwrapped(module)).__name__
        fields = {"model": model, "forwards": graphs}
        if phase.function and not phase.function.startswith("<"):
            variant, fields = "forwards-in-function", fields | {"function": phase.function}
        else:
            variant = "forwards"
        self.ctx.report(EVAL_WITH_GRAD, at=phase.location, key=id(module), variant=variant, fields=fields,
                        evidence={"forward_passes": graphs})


def _contains(outer: nn.Module, inner: nn.Module) -> bool:
    return any(m is inner for m in outer.modules())


def _user_caller() -> FrameType | None:
    return user_frame(sys._getframe(1))


def _training_site(step: Location | None, switch: Location) -> Location | None:
    """Where `model.train()` belongs in the file of both the step and the `eval()` it follows."""
    tree = module_tree(switch[0]) if step is not None and step[0] == switch[0] else None
    site = training_site(tree, step[1], switch[1]) if tree is not None and step is not None else None
    return (switch[0], site.lineno) if site is not None else None


def _evaluation_site(call: Location | None) -> Location | None:
    """Where `model.eval()` belongs for an evaluation whose forward runs at `call`, when not there."""
    tree = module_tree(call[0]) if call is not None else None
    site = evaluation_site(tree, call[1]) if tree is not None and call is not None else None
    return (call[0], site.lineno) if site is not None and call is not None and site.lineno != call[1] else None
