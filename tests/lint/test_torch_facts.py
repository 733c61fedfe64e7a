"""What lint rules take for granted about torch, seen on the installed torch (2.13 here).

Each rule doc that states one of these facts points back at the behaviour tested here, so a
torch release that changes it fails this file rather than silently making a rule wrong.
"""

from __future__ import annotations

import argparse
import pickle
import warnings
from pathlib import Path

import pytest
import torch
from torch.utils.checkpoint import checkpoint


def test_float_of_a_float32_leaf_is_the_same_leaf() -> None:
    """TD169 leaves `torch.zeros(n, requires_grad=True).float()` alone."""
    leaf = torch.zeros(3, requires_grad=True)
    assert leaf.float() is leaf and leaf.to(torch.float32) is leaf
    assert not leaf.half().is_leaf


def test_a_new_optimizer_does_not_reset_gradients() -> None:
    """TD110 flags a loop that rebuilds its optimizer over the model's parameters."""
    model = torch.nn.Linear(2, 1)
    x = torch.ones(4, 2)
    grads = []
    for _ in range(2):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
        model(x).sum().backward()
        optimizer.step()
        grads.append(model.weight.grad.clone())  # type: ignore[union-attr]
    assert torch.equal(grads[1], 2 * grads[0])


def test_grad_scaler_state_is_numbers_only() -> None:
    """TD166 leaves a checkpoint read by a GradScaler alone: nothing in it has a device."""
    state = torch.amp.GradScaler("cpu").state_dict()
    assert state and all(isinstance(v, (int, float)) for v in state.values())


def test_weights_only_load_rejects_a_namespace(tmp_path: Path) -> None:
    """TD174: the default `torch.load` fails on a checkpoint holding `args`, with this message."""
    path = tmp_path / "checkpoint.pth"
    torch.save({"model": torch.nn.Linear(2, 2).state_dict(), "args": argparse.Namespace(lr=0.1)}, path)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed") as caught:
        torch.load(path)
    assert "Unsupported global: GLOBAL argparse.Namespace" in str(caught.value)
    assert torch.load(path, weights_only=False)["args"].lr == 0.1
    torch.save({"model": torch.nn.Linear(2, 2).state_dict(), "args": {"lr": 0.1}, "epoch": 3}, path)
    assert torch.load(path)["args"] == {"lr": 0.1}


def test_checkpoint_without_use_reentrant_warns_and_drops_gradients() -> None:
    """TD175: without `use_reentrant`, checkpoint() warns and runs the reentrant variant, which
    gives a block whose inputs do not require grad no parameter gradients."""
    block, head = torch.nn.Linear(4, 4), torch.nn.Linear(4, 1)
    x = torch.randn(2, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        head(checkpoint(block, x)).sum().backward()
    messages = [str(w.message) for w in caught]
    assert any("use_reentrant parameter should be passed explicitly" in m for m in messages)
    assert block.weight.grad is None and head.weight.grad is not None
    block.zero_grad(set_to_none=True)
    head(checkpoint(block, x, use_reentrant=False)).sum().backward()
    assert block.weight.grad is not None


def _raises_after_in_place(op) -> bool:  # type: ignore[no-untyped-def]
    weight = torch.randn(4, 4, requires_grad=True)
    out = op(weight * 1.0)
    out += 1
    try:
        out.sum().backward()
    except RuntimeError as error:
        assert "modified by an inplace operation" in str(error)
        return True
    return False


def _resolve(qualified: str):  # type: ignore[no-untyped-def]
    value = torch
    for part in qualified.split(".")[1:]:
        value = getattr(value, part)
    return value


def test_the_ops_td412_lists_save_their_output_and_their_cousins_do_not() -> None:
    """TD412 (lint) flags an in-place change after exactly the ops whose backward reads their output."""
    from torchdoctor.linter.checks import saved_output as td412

    for name in td412.SAVES_OUTPUT:
        function = _resolve(name)
        dim = {"dim": -1} if "soft" in name else {}
        assert _raises_after_in_place(lambda x, f=function, d=dim: f(x, **d)), name
    for method in td412.SAVES_OUTPUT_METHODS:
        dim = (-1,) if "softmax" in method else ()
        assert _raises_after_in_place(lambda x, m=method, d=dim: getattr(x, m)(*d)), method
    for name in td412.SAVES_OUTPUT_IN_PLACE:
        function = _resolve(name)
        assert _raises_after_in_place(lambda x, f=function: f(x, inplace=True)), name
        assert not _raises_after_in_place(function), name
    for name in td412.SAVING_LAYERS:
        layer = _resolve(name)(**({"dim": -1} if "max" in name or "min" in name else {}))
        assert _raises_after_in_place(layer), name
    for name in td412.SAVING_LAYERS_IN_PLACE:
        assert _raises_after_in_place(_resolve(name)(inplace=True)) and not _raises_after_in_place(_resolve(name)()), name
    keep_their_input = [
        torch.nn.functional.gelu, torch.nn.functional.silu, torch.nn.functional.hardtanh, torch.nn.Linear(4, 4),
        torch.nn.BatchNorm1d(4), lambda x: torch.nn.functional.dropout(x, 0.5, True), lambda x: x @ x.t(),
        lambda x: torch.relu(x) * 2,
    ]
    assert not any(_raises_after_in_place(op) for op in keep_their_input)


def test_an_in_place_dropout_changes_a_saved_output_only_with_p_in_training() -> None:
    """TD412 (lint) makes `attn = self.drop(attn.softmax(-1))` with `nn.Dropout(p, inplace=True)` a warning."""
    outcomes = []
    for p, training in ((0.1, True), (0.0, True), (0.1, False)):
        drop = torch.nn.Dropout(p, inplace=True).train(training)
        outcomes.append(_raises_after_in_place(lambda x, d=drop: d(x.softmax(-1)) - 1))
    assert outcomes == [True, False, False]


def test_the_out_of_place_ops_leave_their_inputs_unchanged() -> None:
    """TD178: `x.view(...)`, `grad.add(p, alpha=...)`, `torch.div`, `x.masked_fill`, `x.clamp`
    and `x * 0` return new tensors; their inputs keep their shape and values."""
    x, p = torch.ones(2, 3), torch.full((2, 3), 2.0)
    x.view(3, 2), x.add(p, alpha=0.5), torch.div(x, 4), x.masked_fill(x > 0, 0.0), x.clamp(0, 0.5), x * 0
    assert x.shape == (2, 3) and torch.equal(x, torch.ones(2, 3))


def test_a_reduced_loss_and_a_full_reduction_have_no_index() -> None:
    """TD179: a reduced loss and `.sum()` are 0-dim, and `[0]` on them raises; `reduction='none'`
    keeps a dimension."""
    out, y = torch.randn(4, 3), torch.tensor([0, 1, 2, 0])
    loss = torch.nn.CrossEntropyLoss()(out, y)
    assert loss.dim() == 0 and out.sum().dim() == 0
    for zero_dim in (loss.data, out.sum(), torch.nn.functional.nll_loss(out, y, reduction="sum")):
        with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
            zero_dim[0]  # noqa: B018
    assert torch.nn.CrossEntropyLoss(reduction="none")(out, y)[0].dim() == 0


def test_parameters_is_a_generator_that_a_first_consumer_uses_up() -> None:
    """TD180: after an optimizer took `model.parameters()`, the same generator yields nothing,
    and `clip_grad_norm_` over it clips nothing (it reports a total norm of 0)."""
    model = torch.nn.Linear(2, 2)
    params = model.parameters()
    torch.optim.SGD(params, lr=0.1)
    assert list(params) == []
    model(torch.ones(1, 2)).sum().mul(1e3).backward()
    params = model.parameters()
    torch.optim.SGD(params, lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch 2.13 warns that the generator is empty
        assert torch.nn.utils.clip_grad_norm_(params, 1.0).item() == 0.0
    assert model.weight.grad is not None and model.weight.grad.norm().item() > 1.0
