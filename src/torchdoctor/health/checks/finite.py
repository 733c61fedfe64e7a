"""NaN and Inf: in the inputs, parameters, outputs, loss and gradients, with the first
operation or module that produced one (TD145).

Only the first stage that goes non-finite is reported (the later ones follow from it). The
producer is found by running the forward (or loss) again under a tracer that checks each
operation's result, and for gradients by a backward pass in anomaly mode.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import torch

from torchdoctor.core.locate import is_user_file
from torchdoctor.core.wording import listing
from torchdoctor.health.batch import call_model
from torchdoctor.health.context import CheckContext, TrainPass, stand_in_objective
from torchdoctor.health.outcome import Outcome, module_of
from torchdoctor.health.tracer import ModuleWatch, Origin, Tracer
from torchdoctor.introspect.sites import Site, where
from torchdoctor.introspect.tensors import tensors_in
from torchdoctor.rules.numerics.non_finite_values import RULE as NON_FINITE

NAME = "non-finite"
ORDER = 120  # its place in the report (core/plugins.py)
TITLE = "no NaN or Inf in inputs, outputs, loss, gradients or weights"
#: what the check does, in its row of docs/check.md's table (`python -m torchdoctor.dev generate`)
DOES = (
    "NaN/Inf in inputs, parameters, output, loss and gradients, with the first operation that produced "
    "one (and its line)"
)
RULES = (NON_FINITE.code,)

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_FUNCTION = re.compile(r"Function '(\w+)' returned nan")


def _finite(tree: Any) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in tensors_in(tree) if t.is_floating_point() and t.numel() and t.device.type != "meta")


def run(ctx: CheckContext) -> Outcome:
    model = ctx.subject.model
    if not _finite(ctx.batch.inputs):
        return _found(ctx, "the input batch", "the data", ctx.data_site(0))
    if not _finite(ctx.batch.targets):
        return _found(ctx, "the targets", "the data", ctx.data_site(1))
    bad = [n for n, p in model.named_parameters() if not _finite(p)]
    if bad:
        return _found(ctx, f"parameter(s) {listing(bad, 3)}", "the initial weights (or the checkpoint they were loaded from)",
                      ctx.locate.module(module_of(bad[0])))
    tp = ctx.train_pass()
    if tp.forward_failure is not None:
        return Outcome(skipped="the forward pass failed")
    if not _finite(tp.output):
        origin = _forward_origin(ctx)
        return _found(ctx, "the model output", *_origin_text(ctx, origin))
    if tp.loss is not None and not _finite(tp.loss):
        origin = _loss_origin(ctx, tp)
        return _found(ctx, "the loss", *_origin_text(ctx, origin, default="the loss function"))
    grads = [n for n, p in tp.copies.model.named_parameters() if p.grad is not None and not _finite(p.grad)]
    if grads:
        text, site = _backward_origin(ctx)
        return _found(ctx, f"the gradient of {listing(grads, 3)}", text, site)
    if ctx.stepped:  # the step check ran the optimizer on these finite gradients
        stepped = [n for n, p in tp.copies.model.named_parameters() if not _finite(p)]
        if stepped:
            cause = f"{type(tp.copies.optimizer).__name__}.step() on finite gradients (a learning rate far too high, or an eps too small for the dtype)"
            return _found(ctx, f"parameter(s) {listing(stepped, 3)} after one step", cause,
                          ctx.locate.best(ctx.locate.of(ctx.subject.optimizer)))
    return Outcome(detail="inputs, parameters, output, loss, gradients and the stepped weights are finite"
                   if ctx.stepped else "inputs, parameters, output, loss and gradients are finite")


def _found(ctx: CheckContext, what: str, origin: str, site: Site | None) -> Outcome:
    finding = NON_FINITE.finding(**where(ctx.locate.best(site)), fields={"what": what, "origin": origin})
    return Outcome([finding], detail=f"{what}: NaN or Inf")


def _origin_text(ctx: CheckContext, origin: Origin | None, default: str = "an operation in forward()") -> tuple[str, Site | None]:
    if origin is None:
        return default, None
    modules = dict(ctx.subject.model.named_modules())
    in_module = ""
    if origin.module:
        in_module = f" in `{origin.module}` ({type(modules[origin.module]).__name__})" if origin.module in modules else ""
    site = origin.site or (ctx.locate.module(origin.module) if origin.module is not None else None)
    at = f" at {origin.site.shown}" if origin.site is not None else ""
    return f"{origin.op}{at}{in_module}", site


def _forward_origin(ctx: CheckContext) -> Origin | None:
    copies = ctx.copies()
    copies.model.train()
    watch = ModuleWatch(copies.model)
    tracer = Tracer(watch, diagnose=True)
    inputs, _ = ctx.batch.fresh()
    try:
        with torch.no_grad(), tracer:
            call_model(copies.model, inputs)
    except Exception:
        return None
    finally:
        watch.close()
    return tracer.records.origin


def _loss_origin(ctx: CheckContext, tp: TrainPass) -> Origin | None:
    loss_fn = ctx.loss_call(tp)
    if loss_fn is None:
        return None
    tracer = Tracer(diagnose=True)
    _, targets = ctx.batch.fresh()
    try:
        with torch.no_grad(), tracer:
            loss_fn(tp.output, targets)
    except Exception:
        return None
    return tracer.records.origin


def _backward_origin(ctx: CheckContext) -> tuple[str, Site | None]:
    """Run forward and backward in anomaly mode: it names the backward function that made the
    first NaN and prints the forward traceback of the operation behind it."""
    copies = ctx.copies()
    copies.model.train()
    inputs, targets = ctx.batch.fresh()
    tp = ctx.train_pass()
    loss_fn = copies.loss_fn if tp.loss_is_users else ctx.loss_call(tp)
    with warnings.catch_warnings(record=True) as caught, torch.autograd.detect_anomaly(check_nan=True):
        warnings.simplefilter("always")
        try:
            with torch.enable_grad():
                output = call_model(copies.model, inputs)
                loss = loss_fn(output, targets) if loss_fn is not None else stand_in_objective(output)
                assert loss is not None  # the gradients this explains came from a backward on such a loss
                loss = loss if loss.dim() == 0 else loss.float().mean()
                loss.backward()
        except RuntimeError as exc:
            match = _FUNCTION.search(str(exc))
            function = match.group(1) if match else "a backward function"
            site = _last_user_frame("\n".join(str(w.message) for w in caught))
            at = f" (forward at {site.shown})" if site is not None else ""
            return f"the backward of {function}{at}", site
        except Exception:
            pass
    return "backward()", None


def _last_user_frame(text: str) -> Site | None:
    found = None
    for filename, line in _FRAME.findall(text):
        if is_user_file(filename):
            found = Site(filename, int(line))
    return found
