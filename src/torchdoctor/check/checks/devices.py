"""Device consistency of parameters, buffers, inputs and targets (TD308, TD309).

The analysis works on device names, so it is tested without a GPU (with the `meta` device and
injected names); on a CUDA machine the same code sees "cuda:0" where the tests see "meta".
"""

from __future__ import annotations

from collections import Counter

import torch
from torch import nn

from torchdoctor.check.batch import tensors_in
from torchdoctor.check.checks import Outcome, listing
from torchdoctor.check.context import CheckContext
from torchdoctor.check.sites import where
from torchdoctor.rules.device.device_mismatch import RULE as DEVICE_MISMATCH
from torchdoctor.rules.device.model_split_across_devices import RULE as MODEL_SPLIT

NAME = "devices"
TITLE = "devices of parameters, buffers, inputs and targets"
RULES = (DEVICE_MISMATCH.code, MODEL_SPLIT.code)


def module_devices(model: nn.Module) -> dict[str, set[str]]:
    """Device name -> the modules that own parameters or buffers there."""
    found: dict[str, set[str]] = {}
    for module_name, module in model.named_modules():
        for tensor in [*module.parameters(recurse=False), *module.buffers(recurse=False)]:
            found.setdefault(str(tensor.device), set()).add(module_name or "(root)")
    return found


def split_message(devices: dict[str, set[str]]) -> dict[str, str] | None:
    """Template fields for TD309 when the model mixes the CPU (or meta) with another device
    type; None for one device type (several GPUs are deliberate model parallelism)."""
    kinds: dict[str, set[str]] = {}
    for device, modules in devices.items():
        kinds.setdefault(torch.device(device).type, set()).update(modules)
    if len(kinds) < 2:
        return None
    ordered = sorted(kinds.items(), key=lambda item: (len(item[1]), item[0]))
    minority, modules = ordered[0]
    majority = ordered[-1][0]
    return {
        "devices": " and ".join(sorted(kinds)),
        "modules": listing(sorted(modules)),
        "minority": minority,
        "majority": majority,
    }


def mismatch_detail(stage: str, inputs: set[str], targets: set[str], devices: dict[str, set[str]]) -> str:
    """Who is where, e.g. "inputs on cpu; parameters of `fc` on cuda:0"."""
    parts = []
    if stage == "forward pass" and inputs:
        parts.append(f"inputs on {', '.join(sorted(inputs))}")
    if stage == "loss" and targets:
        parts.append(f"targets on {', '.join(sorted(targets))}")
    for device, modules in sorted(devices.items()):
        parts.append(f"parameters/buffers of {listing(sorted(f'`{m}`' for m in modules), 3)} on {device}")
    return "; ".join(parts)


def run(ctx: CheckContext) -> Outcome:
    model = ctx.subject.model
    devices = module_devices(model)
    inputs = {str(t.device) for t in tensors_in(ctx.batch.inputs)}
    targets = {str(t.device) for t in tensors_in(ctx.batch.targets)}
    findings = []
    split = split_message(devices)
    if split is not None:
        modules = sorted(devices.get(split["minority"], set()) or _modules_of_type(devices, split["minority"]))
        site = ctx.locate.module(modules[0] if modules and modules[0] != "(root)" else "")
        findings.append(MODEL_SPLIT.finding(**where(site), **split))
    tp = ctx.train_pass()
    for stage, failure in (("forward pass", tp.forward_failure), ("loss", tp.loss_failure)):
        if ctx.failure_kind(failure) == "device":
            site = failure.site or ctx.locate.module(failure.module or "")
            detail = mismatch_detail(stage, inputs, targets, devices)
            findings.append(DEVICE_MISMATCH.finding(**where(ctx.locate.best(site)), stage=stage, detail=detail))
    counts = Counter(str(p.device) for p in model.parameters())
    summary = ", ".join(f"{n} on {d}" for d, n in counts.most_common()) or "no parameters"
    detail = f"parameters: {summary}; inputs on {', '.join(sorted(inputs)) or '-'}"
    return Outcome(findings, detail=detail)


def _modules_of_type(devices: dict[str, set[str]], kind: str) -> set[str]:
    return {m for device, modules in devices.items() if torch.device(device).type == kind for m in modules}
