"""Batch independence: in eval mode, sample i's output does not depend on sample j's input
(TD302). Catches view/reshape that moves the batch dimension.

The gradient of one sample's output with respect to the whole input batch is zero outside
that sample unless forward() mixes samples. Integer inputs (token ids) are handled through the
outputs of the embedding layers.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from torchdoctor.health.batch import call_model, primary_output
from torchdoctor.health.context import CheckContext
from torchdoctor.health.outcome import Outcome
from torchdoctor.introspect.sites import definition_site, where
from torchdoctor.introspect.tensors import map_tree
from torchdoctor.rules.data.batch_samples_mixed import RULE as SAMPLES_MIXED

NAME = "batch-independence"
ORDER = 90  # its place in the report (core/plugins.py)
TITLE = "samples in a batch do not affect each other"
#: what the check does, in its row of docs/check.md's table (`python -m torchdoctor.dev generate`)
DOES = "in eval mode, the gradient of one sample's output toward the other samples' inputs is zero"
RULES = (SAMPLES_MIXED.code,)

SAMPLES = 4
#: the gradient toward other samples, relative to the sample's own, above which they mix
TOLERANCE = 1e-4


def run(ctx: CheckContext) -> Outcome:
    tp = ctx.train_pass()
    if tp.forward_failure is not None:
        return Outcome(skipped="the forward pass failed")
    batch = ctx.batch.head(SAMPLES)
    size = batch.size
    if size is None or size < 2:
        return Outcome(skipped="needs a batch of 2 or more samples with the batch in dim 0")
    model = ctx.eval_copy().model
    inputs, _ = batch.fresh()
    watched: list[torch.Tensor] = []

    def track(t: torch.Tensor) -> torch.Tensor:
        if t.is_floating_point() and t.dim() > 0 and t.shape[0] == size:
            t = t.requires_grad_(True)
            watched.append(t)
        return t

    inputs = map_tree(inputs, track)
    handles = [] if watched else _watch_embeddings(model, size, watched)
    try:
        with torch.enable_grad():
            output = primary_output(call_model(model, inputs))
    except Exception as exc:  # e.g. a model that needs its full batch
        return Outcome(skipped=f"the model does not run on {size} samples in eval mode ({type(exc).__name__})")
    finally:
        for handle in handles:
            handle.remove()
    if not watched:
        return Outcome(skipped="no floating-point input or embedding output to differentiate")
    if output is None or output.dim() == 0 or output.shape[0] != size or not output.requires_grad:
        return Outcome(skipped="the output's dim 0 is not the batch")
    # the first and the last sample: a recurrent layer reading the batch as time mixes only
    # earlier samples into later ones
    sample, own, other = max((_gradients(output, watched, s) for s in (size - 1, 0)), key=lambda g: g[2] / max(g[1], g[2], 1e-30))
    if own == 0.0 and other == 0.0:
        return Outcome(skipped="the output does not depend on the input (see the gradient check)")
    if other <= TOLERANCE * max(own, other):
        return Outcome(detail=f"checked on {size} samples in eval mode")
    site = definition_site(type(ctx.subject.model).forward) or ctx.locate.module("")
    finding = SAMPLES_MIXED.finding(**where(ctx.locate.best(site)),
                                    fields={"sample": sample, "other": other, "own": own},
                                    evidence={"own_gradient": own, "other_gradient": other})
    return Outcome([finding], detail=f"checked on {size} samples in eval mode")


def _gradients(output: torch.Tensor, watched: list[torch.Tensor], sample: int) -> tuple[int, float, float]:
    """(sample, largest gradient of its output toward its own input, toward the others')."""
    # a fixed random projection, not a plain sum: the sum of a softmax is constant
    weights = torch.rand(output[sample].shape, generator=torch.Generator().manual_seed(0)).to(output.device)
    grads = torch.autograd.grad((output[sample].float() * weights).sum(), watched, allow_unused=True, retain_graph=True)
    own = other = 0.0
    for grad in grads:
        if grad is None:
            continue
        own = max(own, float(grad[sample].abs().max()))
        rest = torch.cat([grad[:sample], grad[sample + 1:]])
        other = max(other, float(rest.abs().max()) if rest.numel() else 0.0)
    return sample, own, other


def _watch_embeddings(model: nn.Module, size: int, watched: list[torch.Tensor]) -> list[Any]:
    """Make embedding outputs differentiable leaves we can take gradients toward."""

    def hook(module: nn.Module, args: Any, output: torch.Tensor) -> torch.Tensor | None:
        if isinstance(output, torch.Tensor) and output.dim() > 0 and output.shape[0] == size:
            leaf = output.detach().requires_grad_(True)
            watched.append(leaf)
            return leaf
        return None

    return [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, (nn.Embedding, nn.EmbeddingBag))]


