"""First, do no harm: the check works on copies and puts every global state back.

`Isolation` saves the random states (torch CPU and CUDA, `random`, NumPy's global state and
the generators stored on the dataset or loader), grad mode, anomaly mode and warning filters,
and restores them bit for bit at the end. `copy_for_check` deep-copies model, optimizer and
loss together, so the copied optimizer holds the copied parameters, and carries the
gradients over (a deep copy of a Parameter drops `.grad`, and stale gradients matter: they are
what makes a "frozen" parameter move).
"""

from __future__ import annotations

import copy
import io
import random
import warnings
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from torchdoctor.introspect.rng import rng_objects

try:  # NumPy is optional for torch; the check works without it
    import numpy as np
except ImportError:  # pragma: no cover
    np = None  # type: ignore[assignment]


def _get_state(generator: Any) -> Any:
    if isinstance(generator, torch.Generator):
        return generator.get_state()
    if isinstance(generator, random.Random):
        return generator.getstate()
    if np is not None and isinstance(generator, np.random.Generator):
        return copy.deepcopy(generator.bit_generator.state)
    return generator.get_state()


def _set_state(generator: Any, state: Any) -> None:
    if isinstance(generator, torch.Generator):
        generator.set_state(state)
    elif isinstance(generator, random.Random):
        generator.setstate(state)
    elif np is not None and isinstance(generator, np.random.Generator):
        generator.bit_generator.state = state
    else:
        generator.set_state(state)


@dataclass
class _Saved:
    torch_cpu: torch.Tensor
    torch_cuda: list[torch.Tensor] | None
    python: Any
    numpy: Any
    generators: list[tuple[Any, Any]]
    grad_enabled: bool
    anomaly: tuple[bool, bool]
    default_dtype: torch.dtype


class Isolation:
    """Save global state on enter, restore it on exit (also when a check fails)."""

    def __init__(self, *owners: Any) -> None:
        self._owners = owners
        self._saved: _Saved | None = None
        self._warnings: Any = None

    def __enter__(self) -> Isolation:
        generators = [(g, _get_state(g)) for owner in self._owners for _, g in rng_objects(owner)]
        self._saved = _Saved(
            torch_cpu=torch.get_rng_state(),
            torch_cuda=torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None,
            python=random.getstate(),
            numpy=np.random.get_state() if np is not None else None,
            generators=generators,
            grad_enabled=torch.is_grad_enabled(),
            anomaly=(torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
            default_dtype=torch.get_default_dtype(),
        )
        # the user's code under check warns (broadcasting, deprecations): keep that out of
        # their terminal and out of the once-per-location registry
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("ignore")
        return self

    def __exit__(self, *exc: Any) -> None:
        saved = self._saved
        assert saved is not None
        self._warnings.__exit__(*exc)
        torch.set_rng_state(saved.torch_cpu)
        if saved.torch_cuda is not None:
            torch.cuda.set_rng_state_all(saved.torch_cuda)
        random.setstate(saved.python)
        if np is not None and saved.numpy is not None:
            np.random.set_state(saved.numpy)
        for generator, state in saved.generators:
            _set_state(generator, state)
        torch.set_grad_enabled(saved.grad_enabled)
        torch.autograd.set_detect_anomaly(*saved.anomaly)
        torch.set_default_dtype(saved.default_dtype)


@dataclass
class Copies:
    """A private copy of what the check may change; `parameters` maps copy names to originals."""

    model: nn.Module
    optimizer: torch.optim.Optimizer | None
    loss_fn: Any


def copy_for_check(model: nn.Module, optimizer: torch.optim.Optimizer | None, loss_fn: Any) -> Copies:
    """Deep-copy model, optimizer and loss in one go (the optimizer then points at the copied
    parameters) and carry the gradients over.

    Non-leaf tensors cached as attributes (old-style `weight_norm`, activations kept for later)
    cannot be deep-copied; they are replaced by detached clones in the copy.
    """
    memo: dict[int, Any] = {}
    model_copy: nn.Module
    if isinstance(model, torch.jit.ScriptModule):
        model_copy = _script_copy(model)
        for parameter, its_copy in zip(model.parameters(), model_copy.parameters()):
            memo[id(parameter)] = its_copy
        optimizer_copy, loss_copy = copy.deepcopy((optimizer, loss_fn), memo)
    else:
        for module in model.modules():
            for value in vars(module).values():
                if isinstance(value, torch.Tensor) and not value.is_leaf:
                    memo[id(value)] = value.detach().clone()
        model_copy, optimizer_copy, loss_copy = copy.deepcopy((model, optimizer, loss_fn), memo)
    originals = _all_parameters(model, optimizer)
    copies = _all_parameters(model_copy, optimizer_copy)
    for original, copied in zip(originals, copies):
        if original.grad is not None:
            copied.grad = original.grad.detach().clone()
    return Copies(model_copy, optimizer_copy, loss_copy)


def _script_copy(model: torch.jit.ScriptModule) -> torch.jit.ScriptModule:
    """A TorchScript module copied through an in-memory save and load: `copy.deepcopy` of a
    ScriptModule gives parameters that are not leaves, which autograd and optimizers reject."""
    buffer = io.BytesIO()
    torch.jit.save(model, buffer)
    buffer.seek(0)
    copied = torch.jit.load(buffer)
    copied.train(model.training)
    for original, new in zip(model.parameters(), copied.parameters()):
        new.requires_grad_(original.requires_grad)
    return copied


def _all_parameters(model: nn.Module, optimizer: torch.optim.Optimizer | None) -> list[torch.Tensor]:
    """Parameters of the model then of the optimizer, in a stable order, without repeats."""
    seen: set[int] = set()
    found: list[torch.Tensor] = []
    groups = [p for group in optimizer.param_groups for p in group["params"]] if optimizer is not None else []
    for tensor in [*model.parameters(), *groups]:
        if id(tensor) not in seen:
            seen.add(id(tensor))
            found.append(tensor)
    return found
