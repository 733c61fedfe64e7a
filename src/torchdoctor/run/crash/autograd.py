"""Crashes in autograd: in-place changes, freed graphs, losses without a graph, `.numpy()`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from torchdoctor.rules.grad_flow.backward_through_freed_graph import RULE as FREED
from torchdoctor.rules.grad_flow.saved_tensor_modified_in_place import RULE as INPLACE
from torchdoctor.rules.grad_mode.backward_without_graph import RULE as NO_GRAPH
from torchdoctor.rules.grad_mode.leaf_modified_in_place import RULE as LEAF
from torchdoctor.rules.grad_mode.numpy_of_grad_tensor import RULE as NUMPY
from torchdoctor.run.crash.describe import torch_module, user_names
from torchdoctor.run.crash.explain import Explanation
from torchdoctor.run.crash.model import Crash

if TYPE_CHECKING:
    from torchdoctor.run.session import Session

_INPLACE = re.compile(
    r"modified by an inplace operation: \[(?P<type>[\w.]+) \[(?P<shape>[\d, ]*)\]\], which is output (?P<index>\d+) of (?P<op>\w+), is at version (?P<now>\d+); expected version (?P<then>\d+)"
)


def saved_tensor_modified(crash: Crash, session: Session | None) -> Explanation | None:
    match = _INPLACE.search(crash.message)
    if match is None:
        return None
    op = _op_name(match["op"])
    shape = match["shape"].replace(" ", "")
    changes = int(match["now"]) - int(match["then"])
    return Explanation(
        INPLACE,
        {"op": op, "shape": f"[{shape}]" if shape else "scalar", "changes": changes, "times": "time" if changes == 1 else "times"},
        evidence={"forward_op": match["op"]},
    )


def leaf_modified(crash: Crash, session: Session | None) -> Explanation | None:
    if "a leaf Variable that requires grad is being used in an in-place operation" not in crash.message:
        return None
    return Explanation(LEAF, {})


def freed_graph(crash: Crash, session: Session | None) -> Explanation | None:
    if "Trying to backward through the graph a second time" not in crash.message:
        return None
    across_steps = session is not None and session.backward.completed > 0 and session.steps > session.steps_at_last_backward
    if across_steps:
        cause = "a tensor computed in an earlier step (a recurrent hidden state, a cached feature, a running total) is used again, so this backward() reaches the previous step's graph, which was already freed"
        hint = "Detach what you carry from one step to the next at the start of the step (`h = h.detach()`); do not pass retain_graph=True, which keeps every old graph in memory."
    else:
        cause = "backward() runs twice over the same graph in one step (two losses that share part of the graph, or backward() called twice)"
        hint = "Add the losses and call backward() once (`(loss_a + loss_b).backward()`), or pass `retain_graph=True` to the first of the two backward() calls only."
    return Explanation(FREED, {"cause": cause, "hint": hint})


def backward_without_graph(crash: Crash, session: Session | None) -> Explanation | None:
    if "does not require grad and does not have a grad_fn" not in crash.message:
        return None
    why, hint = _why_no_graph(crash, session)
    return Explanation(NO_GRAPH, {"why": why, "hint": hint})


def numpy_of_grad_tensor(crash: Crash, session: Session | None) -> Explanation | None:
    if "Can't call numpy() on Tensor that requires grad" not in crash.message:
        return None
    frame = crash.user_frame()
    torch = torch_module()
    name = "the tensor"
    if frame is not None and torch is not None:
        for key, value in frame.locals.items():
            if isinstance(value, torch.Tensor) and value.requires_grad:
                name = f"`{key}`"
                break
    return Explanation(NUMPY, {"tensor": name})


def _why_no_graph(crash: Crash, session: Session | None) -> tuple[str, str]:
    torch = torch_module()
    loss = _loss(crash, session)
    if loss is not None and torch is not None and loss.is_inference():
        return (
            "it was computed under torch.inference_mode()",
            "Compute the training loss outside `torch.inference_mode()` (keep that for evaluation).",
        )
    if session is not None:
        roots = session.model_roots()
        params = [p for root in roots for p in root.parameters()]
        if params and not any(p.requires_grad for p in params):
            return (
                "every parameter of the model is frozen (requires_grad=False)",
                "Unfreeze the layers you want to train (`requires_grad_(True)`) before building the optimizer.",
            )
        uses = [session.modules.ran.get(root) for root in roots]
        if uses and all(use is not None and use.grad_calls == 0 and use.no_grad_calls > 0 for use in uses):
            return (
                "the model's forward pass ran with gradients disabled (inside torch.no_grad() or after torch.set_grad_enabled(False))",
                "Run the training forward pass outside `torch.no_grad()`; keep no_grad for evaluation only. Do not set `loss.requires_grad = True`: that silences the error and trains nothing.",
            )
    return (
        "it does not depend on any tensor that requires grad: the graph was cut on the way (`.item()`, `.numpy()`, `.detach()`, `.data` or `torch.tensor(...)` of a tensor), or the loss was computed under torch.no_grad()",
        "Build the loss from the model's output with torch operations only, outside `torch.no_grad()`. Do not set `loss.requires_grad = True`: that silences the error and trains nothing.",
    )


def _loss(crash: Crash, session: Session | None) -> Any:
    if session is not None and session.backward.current is not None and session.backward.current.tensors:
        return session.backward.current.tensors[0]
    torch = torch_module()
    if torch is None:
        return None
    names = user_names(crash)
    frame = crash.user_frame()
    for key, value in (frame.locals.items() if frame else ()):
        if isinstance(value, torch.Tensor) and value.grad_fn is None and not value.requires_grad and id(value) in names:
            if "loss" in key:
                return value
    return None


def _op_name(node: str) -> str:
    """`SigmoidBackward0` or `Sigmoid` -> `sigmoid`; `AddmmBackward0` -> `addmm` (a Linear)."""
    name = re.sub(r"Backward\d*$", "", node)
    special = {"Addmm": "addmm (a Linear layer)", "Mm": "a matrix multiplication", "T": "transpose", "Relu": "relu", "CudnnConvolution": "a convolution", "ConvolutionBackward": "a convolution"}
    return special.get(name, name.lower())


EXPLAINERS = (saved_tensor_modified, leaf_modified, freed_graph, backward_without_graph, numpy_of_grad_tensor)
