"""Device consistency of parameters, buffers, inputs and targets (TD410, TD309).

The analysis works on device names, so it is tested without a GPU (with the `meta` device and
injected names); on a CUDA machine the same code sees "cuda:0" where the tests see "meta".
A device mismatch is TD410 device-mismatch, the rule `run` reports for the same crash.
"""

from __future__ import annotations

import re
from collections import Counter

import torch
from torch import nn

from torchdoctor.core.wording import listing
from torchdoctor.health.context import CheckContext
from torchdoctor.health.outcome import Outcome
from torchdoctor.introspect.sites import where
from torchdoctor.introspect.tensors import tensors_in
from torchdoctor.rules.device.device_mismatch import RULE as DEVICE_MISMATCH
from torchdoctor.rules.device.model_split_across_devices import RULE as MODEL_SPLIT

NAME = "devices"
ORDER = 20  # its place in the report (core/plugins.py)
TITLE = "devices of parameters, buffers, inputs and targets"
#: what the check does, in its row of docs/check.md's table (`python -m torchdoctor.dev generate`)
DOES = "devices of parameters, buffers, inputs and targets; who is where when a device mismatch crashes"
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
    # "meta" holds no data: it is always the odd one out; otherwise the smaller group is
    ordered = sorted(kinds.items(), key=lambda item: (item[0] != "meta", len(item[1]), item[0]))
    minority, modules = ordered[0]
    majority = ordered[-1][0]
    return {
        "devices": " and ".join(sorted(kinds)),
        "modules": _modules(modules),
        "minority": minority,
        "majority": majority,
    }


def mismatch_fields(stage: str, error: str, inputs: set[str], targets: set[str], output: set[str],
                    devices: dict[str, set[str]]) -> dict[str, str]:
    """Who is where, as TD410's template fields: the data on one side, the parameters (or the
    model output) on the other; the devices named in the error when our inventory agrees."""
    where_text = " (the forward pass fails)" if stage == "forward pass" else " (the loss fails)"
    if stage == "loss" and targets and output and targets != output:
        return {"first": "the targets", "first_device": _one(targets), "second": "the model output",
                "second_device": _one(output), "where": where_text}
    data = _one(inputs) if inputs else None
    for device, modules in sorted(devices.items()):
        if data is not None and device != data:
            return {"first": "the input batch", "first_device": data, "second": _modules(modules),
                    "second_device": device, "where": where_text}
    named = re.findall(r"\b(cpu|meta|mps|xpu|cuda(?::\d+)?)\b", error)
    pair = list(dict.fromkeys(named))[:2] + ["another device", "another device"]
    return {"first": "a tensor created inside forward() or the loss (without device=)", "first_device": pair[0],
            "second": "the tensors it meets", "second_device": pair[1], "where": where_text}


def _modules(names: set[str]) -> str:
    shown = sorted(names)
    return ("module " if len(shown) == 1 else "modules ") + listing([f"`{n}`" for n in shown], 3)


def _one(devices: set[str]) -> str:
    return ", ".join(sorted(devices))


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
        findings.append(MODEL_SPLIT.finding(**where(site), fields=split))
    tp = ctx.train_pass()
    output = {str(t.device) for t in tensors_in(tp.output)} if tp.forward_failure is None else set()
    for stage, failure in (("forward pass", tp.forward_failure), ("loss", tp.loss_failure)):
        if failure is not None and ctx.failure_kind(failure) == "device":
            site = failure.site or ctx.locate.module(failure.module or "")
            fields = mismatch_fields(stage, str(failure.error), inputs, targets, output, devices)
            findings.append(DEVICE_MISMATCH.finding(**where(ctx.locate.best(site)), fields=fields))
    counts = Counter(str(p.device) for p in model.parameters())
    summary = ", ".join(f"{n} on {d}" for d, n in counts.most_common()) or "no parameters"
    detail = f"parameters: {summary}; inputs on {', '.join(sorted(inputs)) or '-'}"
    return Outcome(findings, detail=detail)


def _modules_of_type(devices: dict[str, set[str]], kind: str) -> set[str]:
    return {m for device, modules in devices.items() if torch.device(device).type == kind for m in modules}
