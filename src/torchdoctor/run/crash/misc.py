"""Crashes about checkpoints, module construction, memory, and torchrun's own report."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from torchdoctor.rules.api.module_init_not_called import RULE as NO_INIT
from torchdoctor.rules.api.weights_only_load_failed import RULE as WEIGHTS_ONLY
from torchdoctor.rules.memory.out_of_memory import RULE as OOM
from torchdoctor.run.crash.describe import size_text, torch_module
from torchdoctor.run.crash.explain import SILENT, Explanation
from torchdoctor.run.crash.model import Crash

if TYPE_CHECKING:
    from torchdoctor.run.session import Session

_GLOBAL = re.compile(r"Unsupported global: GLOBAL (?P<name>[\w.]+)")
_NO_INIT = re.compile(
    r"cannot assign (?:module|parameters) before Module\.__init__\(\) call"
    r"|'(?P<cls>\w+)' object has no attribute '_(?:backward_hooks|forward_hooks|forward_pre_hooks|parameters|buffers|modules)'"
)
_CUDA_OOM = re.compile(r"CUDA out of memory\. Tried to allocate (?P<want>[\d.]+ \w+)")
_CUDA_TOTAL = re.compile(r"total capacity of (?P<total>[\d.]+ \w+) of which (?P<free>[\d.]+ \w+) is free")
_CUDA_RESERVED = re.compile(r"(?P<allocated>[\d.]+ \w+) is allocated by PyTorch, and (?P<reserved>[\d.]+ \w+) is reserved by PyTorch but unallocated")
_CPU_OOM = re.compile(r"DefaultCPUAllocator: can't allocate memory: you tried to allocate (?P<bytes>\d+) bytes")
_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def torchrun_child_failed(crash: Crash, session: Session | None) -> object | None:
    """torchrun's launcher only relays a rank's failure (or the signal that stopped the job);
    the ranks report what happened."""
    return SILENT if crash.exc_type in ("ChildFailedError", "SignalException") else None


def weights_only(crash: Crash, session: Session | None) -> Explanation | None:
    if "Weights only load failed" not in crash.message:
        return None
    found = _GLOBAL.search(crash.message)
    name = found["name"] if found else "an object that is not a tensor"
    if name.startswith("torch.nn.modules."):
        detail = f"the checkpoint holds a whole pickled module ({name}), saved with `torch.save(model)`"
        hint = "If you trust the file, load it once with `torch.load(path, weights_only=False)` and re-save `model.state_dict()`; from then on save and load state_dicts only."
    else:
        detail = f"the checkpoint holds {name}, which the safe loader does not allow"
        hint = f"If you trust the file: `torch.serialization.add_safe_globals([{name.split('.')[-1]}])` before loading, or `torch.load(path, weights_only=False)`; better, save only tensors and plain containers."
    return Explanation(WEIGHTS_ONLY, {"detail": detail, "hint": hint})


def module_init_not_called(crash: Crash, session: Session | None) -> Explanation | None:
    match = _NO_INIT.search(crash.message)
    if match is None:
        return None
    torch = torch_module()
    module = None
    if torch is not None:
        for frame in crash.deepest():
            candidate = frame.locals.get("self")
            if isinstance(candidate, torch.nn.Module) and "_parameters" not in vars(candidate):
                module = candidate
                break
    name = type(module).__name__ if module is not None else match["cls"] or "the module"
    at = None
    if module is not None:
        init = getattr(type(module).__init__, "__code__", None)
        if init is not None:
            at = (init.co_filename, init.co_firstlineno)
    return Explanation(NO_INIT, {"cls": name}, at=at)


def out_of_memory(crash: Crash, session: Session | None) -> Explanation | None:
    cuda = _CUDA_OOM.search(crash.message)
    cpu = _CPU_OOM.search(crash.message)
    if cuda is None and cpu is None and crash.exc_type != "OutOfMemoryError":
        return None
    if cuda is not None:
        want = cuda["want"]
        total = _CUDA_TOTAL.search(crash.message)
        device = f"the GPU ({total['total']} in total, {total['free']} free)" if total else "the GPU"
        wanted_bytes = _bytes(want)
        total_bytes = _bytes(total["total"]) if total else None
    elif cpu is not None:
        wanted_bytes = int(cpu["bytes"])
        want, device, total_bytes = size_text(wanted_bytes), "the machine", None
    else:
        want, device, wanted_bytes, total_bytes = "more memory", "the device", None, None
    held = _held(session)
    reserved = _CUDA_RESERVED.search(crash.message)
    huge_for_gpu = wanted_bytes is not None and total_bytes is not None and wanted_bytes > total_bytes / 2
    huge_for_cpu = cpu is not None and wanted_bytes is not None and wanted_bytes > 2**36  # 64 GiB in one tensor
    if huge_for_gpu or huge_for_cpu:
        hint = "One tensor this large is almost always a shape mistake: check the size of the layer or tensor created on this line (a Linear built on a flattened image or feature map?)."
    elif reserved is not None and _bytes(reserved["reserved"]) > _bytes(reserved["allocated"]) / 4:
        hint = "Much memory is reserved but unused (fragmentation): set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`; also reduce the batch size or use mixed precision."
    else:
        hint = "Reduce the batch size, use mixed precision (`torch.autocast`) or activation checkpointing, evaluate under `torch.no_grad()`, and do not keep tensors with their graph across steps."
    return Explanation(OOM, {"want": want, "device": device, "held": held, "hint": hint})


def _held(session: Session | None) -> str:
    """What the observed models and optimizers hold: parameters, gradients, optimizer state."""
    torch = torch_module()
    if session is None or torch is None:
        return ""
    params: dict[int, Any] = {id(p): p for root in session.model_roots() for p in root.parameters()}
    state = 0
    for optimizer in list(session.optimizers.known.keys()):
        for group in optimizer.param_groups:
            for p in group["params"]:
                params.setdefault(id(p), p)
        for values in optimizer.state.values():
            state += sum(v.numel() * v.element_size() for v in values.values() if isinstance(v, torch.Tensor))
    weights = sum(p.numel() * p.element_size() for p in params.values())
    grads = sum(p.grad.numel() * p.grad.element_size() for p in params.values() if p.grad is not None)
    if not weights:
        return ""
    return f"; the model holds {size_text(weights)} of parameters, {size_text(grads)} of gradients and {size_text(state)} of optimizer state"


def _bytes(text: str) -> float:
    number, unit = text.split()
    return float(number) * _UNITS.get(unit, 1)


EXPLAINERS = (torchrun_child_failed, weights_only, module_init_not_called, out_of_memory)
