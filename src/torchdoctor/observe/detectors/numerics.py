"""TD145: the first NaN/Inf of the run, the op that made it, its user line, and why.

Every step costs one finiteness check of the loss when backward() is called (for a CPU loss a
read of one number; for a GPU loss an asynchronous copy read one step later, never a sync),
and, on a CPU run, one fused norm of the gradients before each optimizer step.

When the loss turns non-finite the detector works before that backward() runs, while the
parameters are still those that produced it: if a parameter is already non-finite the
previous update was poisoned; if the batch is, the data is; otherwise the model's forward
pass is replayed privately (session.privately: forked RNG, buffers swapped for copies) under
a dispatch mode that stops at the first aten op whose inputs are finite and whose output is
not, and says what its inputs show (nan_origin.py).

When the loss is finite but the gradients are not, it works before optimizer.step() applies
them (the weights are still finite): the forward pass and the loss are replayed with
autograd's anomaly mode recording each node's forward line, and the backward pass under the
same dispatch mode names the forward op whose gradient is not finite. This costs what
`detect_anomaly` costs, once.

The code between a model's output and the loss (a loss function, a loss module, a lambda, a
custom autograd.Function) is not in that replay: during the warm-up steps it is traced for the
ops whose gradient is infinite at a point, and those of a step whose gradients turn out
non-finite are re-run alone on their inputs to name the one that made them (singular.py).
"""

from __future__ import annotations

import math
import sys
import warnings
import weakref
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from torchdoctor.core.locate import display_path
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Backward, Location, LossCall, ModuleCall, Step
from torchdoctor.observe.instruments.grad_norms import GradNorms
from torchdoctor.observe.instruments.optim import params_of
from torchdoctor.observe.nan_origin import Culprit, FirstNonFinite, any_non_finite, cause_of
from torchdoctor.observe.replay import leaves, strong, weak
from torchdoctor.observe.singular import Origin, SingularCalls
from torchdoctor.observe.support import names_text
from torchdoctor.rules.numerics.non_finite_values import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed


class NonFiniteLoss(Detector):
    ORDER = 80
    rules = (RULE,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._done = False
        #: id(model) -> the model, its last training call's arguments and output tensors (all weakly)
        self._inputs: dict[int, tuple[weakref.ref[nn.Module], Any, Any, Any]] = {}
        self._pending: _AsyncCheck | None = None
        #: the last loss call: its function, and weakly its input, target and other arguments
        self._loss: tuple[str, weakref.ref[torch.Tensor], Any, Any] | None = None
        #: the `step(closure)` under way, whose closure makes the gradients
        self._closure_step: Step | None = None
        #: during warm-up: the calls of ops whose gradient is infinite at a point, made after a
        #: model's forward (the loss computation), kept until this step's gradients are checked
        self._singular = SingularCalls()
        #: a model's forward was replayed to look for the op (and did not find it)
        self._replayed = False
        #: torch.compile was called before this session began (a `watch()` block): functions it
        #: compiled run without the session's compile boundary, and dynamo would trace a trace
        self._compiled_before = _compiled_before()

    def on_loss(self, event: LossCall) -> None:
        if not self._done:
            self._loss = (event.function, weakref.ref(event.input), weak(event.target), weak((event.args[2:], event.kwargs)))

    def on_step(self, event: Step) -> None:
        """Gradients that are not finite, before this step applies them (CPU parameters: a GPU
        gradient would have to be read back every step; its NaN shows in the loss a step later).
        A `step(closure)` (LBFGS, Lightning) makes its gradients inside the step: they are
        checked when each backward() of its closure returns, while its batch is still alive."""
        if event.closure:
            self._closure_step = event
        elif not self._done:
            self._check_gradients(self.ctx.instrument(GradNorms).at_step(event.optimizer, event.index))

    def on_backward_end(self, event: Backward) -> None:
        if self._closure_step is not None and not self._done:
            self._check_gradients(self.ctx.instrument(GradNorms).now(self._closure_step.optimizer))

    def on_step_end(self, event: Step) -> None:
        self._closure_step = None
        if self._singular.kept or self._singular.pending:
            self._singular.clear()

    def on_warmup_end(self) -> None:
        self._singular.clear()
        for root in self.ctx.model_roots():
            self.ctx.hold(self.ctx.modules.watch(root, self._watched_call))

    def _check_gradients(self, measured: tuple[list[torch.Tensor], torch.Tensor] | None) -> None:
        if measured is None:
            return
        params, norms = measured
        if math.isfinite(float(norms.sum())):
            return
        self._explain_gradients([p for p, norm in zip(params, norms.tolist()) if not math.isfinite(norm)])

    def on_module_call(self, event: ModuleCall) -> None:
        if event.root and not self._done and event.grad_enabled:
            self._capture(event.module, event.args, event.kwargs, event.output)
            if _on_cpu_with_grad(event.output) and not self._compiled_before:  # warm-up: trace what is made of the output until backward()
                self.ctx.trace_next_step(self._singular, now=True)

    def on_backward(self, event: Backward) -> None:
        if self._singular.pending and not self._done:
            self._singular.decide(t.grad_fn for t in event.tensors if isinstance(t, torch.Tensor))
        if self._done or not event.tensors:
            return
        loss = event.tensors[0]
        if not isinstance(loss, torch.Tensor) or not loss.is_floating_point():
            return
        if loss.device.type == "cpu":
            if not _finite(loss):
                self._explain(loss)
            return
        if self._pending is None:
            self._pending = _AsyncCheck()
        if self._pending.poll():
            self._explain(loss, late=True)
        else:
            self._pending.submit(loss)

    # -- the model's inputs, as weak references: during warm-up from the module hooks, then
    # -- from a watch on each model (one Python call per step, nothing attached to the model)

    def _watched_call(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
        if not self._done and torch.is_grad_enabled():
            self._capture(module, args, kwargs, output)

    def _capture(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
        if any(True for _ in module.parameters(recurse=False)) or module._modules:
            outputs = [weakref.ref(t) for t in leaves(output) if isinstance(t, torch.Tensor)]
            self._inputs[id(module)] = (weakref.ref(module), weak(args), weak(kwargs), outputs)

    # -- explaining ---------------------------------------------------------------------------

    def _explain(self, loss: torch.Tensor, late: bool = False) -> None:
        self._done = True
        step = self.ctx.steps + (0 if not late else -1)
        evidence = {"step": step + 1}
        poisoned = self._non_finite_parameters()
        if poisoned:
            self.ctx.report(RULE, variant="poisoned-parameters", evidence=evidence,
                            fields={"what": f"the loss at step {step + 1}", "parameters": names_text(poisoned)})
            return
        replayed = self._replay()
        if replayed is None:
            self.ctx.report(RULE, variant="not-replayed", fields={"what": f"the loss at step {step + 1}"}, evidence=evidence)
            return
        kind, culprit, root_line = replayed
        if kind == "data":
            self.ctx.report(
                RULE, at=root_line or True, evidence=evidence,
                variant="bad-batch-at" if root_line else "bad-batch",
                fields={"place": f"{display_path(root_line[0])}:{root_line[1]}"} if root_line else {},
            )
        elif kind == "op" and culprit is not None:
            self._report_op(culprit, f"the loss at step {step + 1}", evidence)
        else:
            self.ctx.report(RULE, variant="loss-computation", fields={"what": f"the loss at step {step + 1}"}, evidence=evidence)

    def _report_op(self, culprit: Culprit, what: str, evidence: dict[str, Any]) -> None:
        cause = cause_of(culprit)
        self.ctx.report(
            RULE,
            at=culprit.place or True,
            variant=cause.variant,
            fields={"what": what, "op": culprit.forward_op or culprit.op, **cause.facts},
            evidence={**evidence, "op": culprit.aten, "inputs": [o.text for o in culprit.operands],
                      **({"backward_of": culprit.backward_of} if culprit.backward_of else {})},
        )

    def _explain_gradients(self, bad: list[torch.Tensor]) -> None:
        """Gradients that are not finite from a finite loss: replay the step's forward, loss and
        backward privately and name the forward op whose gradient is not."""
        self._done = True
        step = self.ctx.steps + 1
        names = names_text([self.ctx.modules.param_name(p) or f"parameter {tuple(p.shape)}" for p in bad])
        what = f"the gradients of {names} at step {step} (the loss is finite)"
        evidence = {"step": step}
        origin = self._singular.culprit(bad)
        if origin is not None:
            self._report_singular(origin, what, evidence)
            return
        culprit = self._replay_backward(bad)
        if culprit is not None:
            self._report_op(culprit, what, evidence)
            return
        self.ctx.report(  # at the optimizer.step() that would apply them
            RULE, variant="gradients-replayed" if self._replayed else "gradients-not-replayed", fields={"what": what},
            evidence=evidence,
        )

    def _replay_backward(self, bad: list[torch.Tensor]) -> Culprit | None:
        for ref, args, kwargs, outputs in list(self._inputs.values()):
            root, real_args, real_kwargs = ref(), strong(args), strong(kwargs)
            loss_input = self._loss[1]() if self._loss is not None else None
            loss_call = self._loss if loss_input is not None and len(outputs) == 1 and outputs[0]() is loss_input else None
            if root is None or real_args is None or real_kwargs is None:
                continue
            tracer = FirstNonFinite()
            try:
                with self.ctx.privately(root) as model, torch.enable_grad(), warnings.catch_warnings(), \
                        torch.autograd.set_detect_anomaly(True, check_nan=False):
                    warnings.simplefilter("ignore")
                    output = model(*real_args, **real_kwargs)
                    loss = _loss_again(loss_call, output)
                    with tracer:
                        torch.autograd.grad(loss, bad, allow_unused=True)
            except Exception:  # noqa: BLE001 - a step that cannot be replayed: say less
                continue
            self._replayed = True
            if tracer.culprit is not None:
                return tracer.culprit
        return None

    def _report_singular(self, origin: Origin, what: str, evidence: dict[str, Any]) -> None:
        """An op of the loss computation (or anywhere after a model's forward) whose gradient is
        infinite on the values it was given at this step, at its line."""
        holds, facts = origin.holds
        in_function = "-in-function" if origin.function is not None else ""
        self.ctx.report(
            RULE,
            at=origin.call.location or True,
            variant=(f"singular-{origin.call.kind}-{holds}{in_function}", f"singular-fix-{origin.call.kind}{in_function}"),
            fields={"what": what, "op": origin.op, "operand": origin.operand.text, **facts}
                   | ({"function": origin.function} if origin.function is not None else {}),
            evidence={**evidence, "op": origin.op, "inputs": [origin.operand.text, *(o.text for o in origin.extra)],
                      "backward_of": origin.op, **({"function": origin.function} if origin.function else {})},
        )

    def _non_finite_parameters(self) -> list[str]:
        """Names of the non-finite parameters of the models and optimizers."""
        params: dict[int, tuple[str, torch.Tensor]] = {}
        for root in self.ctx.model_roots():
            for name, param in root.named_parameters():
                params.setdefault(id(param), (self.ctx.modules.param_name(param) or name, param))
        for optimizer in list(self.ctx.optimizers.known.keys()):
            for tensor in params_of(optimizer):
                params.setdefault(id(tensor), (self.ctx.modules.param_name(tensor) or f"parameter {tuple(tensor.shape)}", tensor))
        return [name for name, param in params.values() if param.is_floating_point() and not _finite(param)]

    def _replay(self) -> tuple[str, Culprit | None, Location | None] | None:
        for ref, args, kwargs, _outputs in list(self._inputs.values()):
            root = ref()
            real_args, real_kwargs = strong(args), strong(kwargs)
            if root is None or real_args is None or real_kwargs is None:
                continue
            root_line = self.ctx.modules.roots.get(root)
            if any_non_finite((real_args, real_kwargs)):
                return "data", None, root_line
            tracer = FirstNonFinite()
            try:
                with self.ctx.privately(root) as model, torch.no_grad(), tracer:
                    output = model(*real_args, **real_kwargs)
            except Exception:  # noqa: BLE001 - a forward that cannot be replayed: say less
                continue
            if tracer.culprit is not None:
                return "op", tracer.culprit, root_line
            if not any_non_finite(output):
                return "loss", None, root_line
        return None


def _loss_again(call: tuple[str, weakref.ref[torch.Tensor], Any, Any] | None, output: Any) -> torch.Tensor:
    """The step's loss, computed again from the replayed output when the loss was given the
    model's output itself (`call`); otherwise the sum of the outputs (the origin of a gradient
    that is not finite seldom depends on the values coming back from the loss)."""
    outputs = [t for t in leaves(output) if isinstance(t, torch.Tensor) and t.requires_grad]
    if call is not None and len(outputs) == 1:
        function, _input, target, rest = call
        real_target, real_rest = strong(target), strong(rest)
        if real_target is not None and real_rest is not None:
            extra, kwargs = real_rest
            return getattr(torch.nn.functional, function)(outputs[0], real_target, *extra, **kwargs)
    sums = [t.float().sum() for t in outputs]
    if not sums:
        raise ValueError("the output has no tensor that requires grad")
    total = sums[0]
    for part in sums[1:]:
        total = total + part
    return total


class _AsyncCheck:
    """A GPU loss's finiteness, copied to pinned host memory without waiting; read next step."""

    def __init__(self) -> None:
        self._flag = torch.ones((), dtype=torch.bool).pin_memory()
        self._event: Any = None

    def submit(self, loss: torch.Tensor) -> None:
        if self._event is not None and not self._event.query():
            return  # the device is behind: skip this step rather than wait
        self._flag.copy_(torch.isfinite(loss.detach()).all(), non_blocking=True)
        self._event = torch.cuda.Event()
        self._event.record()

    def poll(self) -> bool:
        """True when an earlier loss turned out non-finite."""
        return self._event is not None and self._event.query() and not bool(self._flag)


def _compiled_before() -> bool:
    """torch.compile has been called in this process (dynamo keeps each compile's backend)."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    backends = getattr(eval_frame, "cached_backends", None)
    return isinstance(backends, dict) and any(backend is not None for backend in list(backends.values()))


def _on_cpu_with_grad(output: Any) -> bool:
    """The output of a model's forward holds a CPU tensor that needs a gradient (the gradients
    of GPU parameters are not checked at each step: tracing after them would find nothing)."""
    return any(isinstance(t, torch.Tensor) and t.requires_grad and t.device.type == "cpu" for t in leaves(output))


def _finite(tensor: torch.Tensor) -> bool:
    if tensor.numel() == 1:
        return math.isfinite(tensor.item())
    return bool(torch.isfinite(tensor.detach()).all())


