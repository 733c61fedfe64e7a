"""What detectors are told about: one small record per observed moment of the training run.

Events hold live references (modules, tensors, optimizers). A detector may read them but must
not keep tensors beyond the call unless it means to (memory), must not change them, and must
not make the device synchronise or draw random numbers (see docs/run-detectors-dev.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: an absolute file name and a 1-based line number in the user's code
Location = tuple[str, int]


@dataclass(frozen=True)
class ModuleCall:
    """A module's forward returned (warm-up steps only, see `Session.warmup`)."""

    module: Any  # torch.nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    output: Any
    root: bool  # called from outside any other module's forward: a model's top-level call
    grad_enabled: bool


@dataclass(frozen=True)
class CompiledCall:
    """A `torch.compile`d module returned (every call; observed at its boundary)."""

    module: Any  # the OptimizedModule
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    output: Any
    seconds: float  # wall time of the call (the first calls include compiling)
    index: int  # 1 for this module's first call


@dataclass(frozen=True)
class LossCall:
    """A loss function is about to run: `torch.nn.functional.<function>` or its `nn` module."""

    function: str  # "cross_entropy", "nll_loss", "mse_loss", ...
    input: Any  # torch.Tensor
    target: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    result: Any = None  # what the loss returned (only in `on_loss_end`)


@dataclass(frozen=True)
class Backward:
    """`backward()` (or `torch.autograd.backward`) is about to run on `tensors`."""

    tensors: tuple[Any, ...]
    retain_graph: bool | None
    create_graph: bool
    index: int  # 1 for the first backward call of the process


@dataclass(frozen=True)
class ZeroGrad:
    """`Optimizer.zero_grad()` or `Module.zero_grad()` was called."""

    owner: Any  # the optimizer or module
    set_to_none: bool
    location: Location | None  # the user's line (found during warm-up only; None afterwards)


@dataclass(frozen=True)
class Step:
    """An optimizer step: `on_step` before it runs, `on_step_end` after."""

    optimizer: Any  # torch.optim.Optimizer
    index: int  # this optimizer's step number, 1-based
    closure: bool  # step(closure): gradients are computed inside the step (LBFGS)


@dataclass(frozen=True)
class LoaderIter:
    """`iter(DataLoader)`: usually the start of an epoch."""

    loader: Any  # torch.utils.data.DataLoader
    index: int  # how many times this loader has been iterated, 1-based
    iterator: Any = None  # what `iter(loader)` returned (its worker processes, for the host memory they use)


@dataclass(frozen=True)
class Batch:
    """A DataLoader produced a batch (only delivered when some detector listens)."""

    loader: Any
    batch: Any
    iterator: Any = None  # the DataLoader iterator that yielded it
