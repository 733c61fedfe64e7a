"""What the checks share: the subject under check, its batch, and one training pass on a copy.

The training pass (forward, loss, backward on a private copy, with the tracer on) is computed
once, on first use, and every check reads from it. Checks that change weights (the optimizer
step, overfitting) or need eval mode get their own copies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, cast

import torch
from torch import nn
from torch.utils.data import DataLoader

from torchdoctor.core.locate import innermost_user_frame, traceback_frames
from torchdoctor.health.batch import Batch, call_model, primary_output
from torchdoctor.health.isolation import Copies, copy_for_check
from torchdoctor.health.tracer import ModuleWatch, Records, Tracer, capture_functions
from torchdoctor.introspect.sites import Locator, Site
from torchdoctor.introspect.tensors import tensors_in

CLASS_LOSSES = ("cross_entropy", "nll_loss")
DEVICE_ERRORS = (
    "on the same device", "is not on the expected device", "found at least two devices",
    "torch.cuda.FloatTensor", "torch.cuda.HalfTensor", "Expected all tensors to be on",
)
DTYPE_ERRORS = (
    "must have the same dtype", "expected scalar type", "Input type (double)", "but got Double",
    "Found dtype Double", "bias type (float) should be the same", "Input type (float) and bias type (double)",
)


@dataclass
class Options:
    """Knobs of the check (all optional). Environment facts can be injected for tests."""

    overfit_steps: int = 300
    overfit_samples: int = 8
    #: a safety net only (said in a notice when it fires): the overfit check's budget is in steps
    overfit_max_seconds: float = 120.0
    progress: bool | None = None
    cpu_count: int | None = None
    shm_free_bytes: int | None = None
    start_method: str | None = None
    skip: tuple[str, ...] = ()


class CheckOptions(TypedDict, total=False):
    """`torchdoctor.check()`'s keyword options, typed: the fields of `Options`."""

    overfit_steps: int
    overfit_samples: int
    overfit_max_seconds: float
    progress: bool | None
    cpu_count: int | None
    shm_free_bytes: int | None
    start_method: str | None
    skip: Sequence[str]


@dataclass
class Subject:
    """The objects under check, as the user handed them over (never modified)."""

    model: nn.Module
    data: Any
    loss_fn: Callable[..., Any] | None
    optimizer: torch.optim.Optimizer | None
    locator: Locator
    label: str = ""


@dataclass
class Failure:
    """An exception raised by the user's code, and the user's line it came from."""

    error: BaseException
    site: Site | None
    module: str | None

    @property
    def text(self) -> str:
        first = str(self.error).strip().splitlines()
        return f"{type(self.error).__name__}: {first[0] if first else ''}".rstrip(": ")

    @classmethod
    def of(cls, error: BaseException, module: str | None = None) -> Failure:
        found = innermost_user_frame(traceback_frames(error.__traceback__))
        return cls(error, Site(*found) if found else None, module)


@dataclass
class TrainPass:
    """One forward, loss and backward in training mode, on a copy."""

    copies: Copies
    records: Records
    ran: set[str] = field(default_factory=set)
    ran_with_grad: set[str] = field(default_factory=set)
    functions: dict[type[torch.autograd.Function], tuple[Any, ...]] = field(default_factory=dict)
    output: Any = None
    forward_failure: Failure | None = None
    loss: torch.Tensor | None = None
    loss_label: str = ""
    loss_is_users: bool = False
    loss_failure: Failure | None = None
    backward_failure: Failure | None = None
    objective: str = ""  # what backward ran on: "the loss" or a stand-in
    frozen_bn_before: dict[str, tuple[torch.Tensor, ...]] = field(default_factory=dict)

    @property
    def prediction(self) -> torch.Tensor | None:
        return primary_output(self.output) if self.forward_failure is None else None


class CheckContext:
    """The subject, its batch, and the stages computed once for all checks."""

    def __init__(self, subject: Subject, batch: Batch, options: Options) -> None:
        self.subject = subject
        self.batch = batch
        self.options = options
        self._train: TrainPass | None = None
        self._eval: Copies | None = None
        self.stepped = False  # the step check has run the optimizer on the training pass's copy

    @property
    def locate(self) -> Locator:
        return self.subject.locator

    def copies(self) -> Copies:
        s = self.subject
        return copy_for_check(s.model, s.optimizer, s.loss_fn)

    def train_pass(self) -> TrainPass:
        if self._train is None:
            self._train = _train_pass(self)
        return self._train

    def eval_copy(self) -> Copies:
        """One copy in eval mode shared by the checks that only run forward passes."""
        if self._eval is None:
            self._eval = self.copies()
            self._eval.model.eval()
        return self._eval

    def data_site(self, index: int) -> Site | None:
        """The line that made the inputs (index 0) or targets (1): the tensor's creation line
        when the data is a batch or a TensorDataset, else the DataLoader's line."""
        data = self.subject.data
        loader = data if isinstance(data, DataLoader) else None
        source = getattr(loader.dataset, "tensors", None) if loader is not None else data
        if isinstance(source, (tuple, list)) and len(source) > index:
            for tensor in tensors_in(source[index]):
                site = self.locate.of(tensor)
                if site is not None:
                    return site
        return self.locate.best(self.locate.of(loader) if loader is not None else None)

    def failure_kind(self, failure: Failure | None) -> str | None:
        """"device" or "dtype" when an exception is a device or dtype mismatch."""
        if failure is None:
            return None
        text = str(failure.error)
        if any(key in text for key in DEVICE_ERRORS):
            return "device"
        if any(key in text for key in DTYPE_ERRORS):
            return "dtype"
        return None

    def loss_call(self, pass_: TrainPass) -> Callable[[Any, Any], torch.Tensor] | None:
        """The loss to train with on a copy: the user's, else one inferred from the batch."""
        if pass_.loss_is_users:
            return pass_.copies.loss_fn
        return inferred_loss(pass_.prediction, self.batch.targets, pass_.output)[1]


def loss_name(loss_fn: Any) -> str:
    if isinstance(loss_fn, nn.Module):
        return type(loss_fn).__name__
    return getattr(loss_fn, "__qualname__", None) or getattr(loss_fn, "__name__", None) or type(loss_fn).__name__


def own_loss(output: Any) -> torch.Tensor | None:
    """The scalar loss a model returns itself (`output.loss` / `output["loss"]`, as Hugging
    Face models do when given labels)."""
    value = output.get("loss") if isinstance(output, dict) else getattr(output, "loss", None)
    return value if isinstance(value, torch.Tensor) and value.dim() == 0 else None


def inferred_loss(prediction: torch.Tensor | None, targets: Any, output: Any = None) -> tuple[str, Callable[[Any, Any], torch.Tensor] | None]:
    """A loss for a model checked without one: the model's own `output.loss`, cross-entropy
    for integer class targets, MSE for float targets of the output's shape, none otherwise."""
    if own_loss(output) is not None:
        return "the model's own loss (output.loss)", lambda out, y: own_loss(out)  # type: ignore[return-value]
    if prediction is None or not isinstance(targets, torch.Tensor) or not prediction.is_floating_point():
        return "", None
    if (
        not targets.is_floating_point()
        and targets.dtype != torch.bool
        and prediction.dim() == targets.dim() + 1
        and prediction.shape[0] == targets.shape[0]
    ):
        return "CrossEntropyLoss (inferred: no loss_fn given)", lambda output, y: torch.nn.functional.cross_entropy(_prediction(output), y)
    if targets.is_floating_point() and prediction.shape == targets.shape:
        return "MSELoss (inferred: no loss_fn given)", lambda output, y: torch.nn.functional.mse_loss(_prediction(output), y)
    return "", None


def _prediction(output: Any) -> torch.Tensor:
    """The model's primary output, for an inferred loss (inferred from one, so there is one)."""
    return cast(torch.Tensor, primary_output(output))


def stand_in_objective(output: Any) -> torch.Tensor | None:
    """Mean of squares of every differentiable output: reaches everything the output depends on."""
    parts = [t.float().pow(2).mean() for t in tensors_in(output) if t.requires_grad and t.is_floating_point()]
    return torch.stack(parts).sum() if parts else None


def _frozen_batchnorm_statistics(model: nn.Module) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The running mean and variance of each batch norm whose own parameters are frozen."""
    found = {}
    for name, module in model.named_modules():
        if not isinstance(module, nn.modules.batchnorm._BatchNorm) or module.running_mean is None:
            continue
        params = list(module.parameters(recurse=False))
        if params and not any(p.requires_grad for p in params) and module.running_var is not None:
            found[name] = (module.running_mean, module.running_var)
    return found


def _train_pass(ctx: CheckContext) -> TrainPass:
    copies = ctx.copies()
    model = copies.model
    model.train()
    for parameter in model.parameters():
        if parameter.requires_grad:
            parameter.grad = None
    watch = ModuleWatch(model)
    tracer = Tracer(watch)
    result = TrainPass(copies, tracer.records)
    result.frozen_bn_before = {
        name: (mean.clone(), var.clone()) for name, (mean, var) in _frozen_batchnorm_statistics(model).items()
    }
    inputs, targets = ctx.batch.fresh()
    try:
        with torch.enable_grad(), capture_functions(result.functions), tracer:
            try:
                result.output = call_model(model, inputs)
            except Exception as exc:  # the user's forward failed: a finding, not our crash
                result.forward_failure = Failure.of(exc, watch.current)
                return result
            finally:
                result.ran = set(watch.ran)
                result.ran_with_grad = set(watch.ran_with_grad)
                watch.stack.clear()
            tracer.phase = "loss"
            _compute_loss(ctx, result, targets)
            objective = result.loss if result.loss is not None else stand_in_objective(result.output)
            if result.loss is None and objective is not None:
                result.objective = "a stand-in objective (the mean square of the outputs)"
            elif result.loss is not None:
                result.objective = "the loss"
            tracer.phase = "backward"
            if objective is not None and objective.requires_grad:
                try:
                    objective.backward()
                except Exception as exc:
                    result.backward_failure = Failure.of(exc)
    finally:
        watch.close()
    return result


def _compute_loss(ctx: CheckContext, result: TrainPass, targets: Any) -> None:
    loss_fn = result.copies.loss_fn
    if loss_fn is not None:
        result.loss_label = loss_name(ctx.subject.loss_fn)
        result.loss_is_users = True
    else:
        result.loss_label, loss_fn = inferred_loss(result.prediction, targets, result.output)
        if loss_fn is None:
            return
    try:
        value = loss_fn(result.output, targets)
    except Exception as exc:
        if result.loss_is_users:
            result.loss_failure = Failure.of(exc)
        return
    if not isinstance(value, torch.Tensor):
        if result.loss_is_users:
            message = f"loss_fn returned a {type(value).__name__}, not a tensor: there is nothing to call backward() on"
            result.loss_failure = Failure(TypeError(message), None, None)
        return
    result.loss = value if value.dim() == 0 else value.float().mean()
