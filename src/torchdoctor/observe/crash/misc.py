"""Crashes about checkpoints, module construction, memory, and torchrun's own report."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from torchdoctor.observe.crash.describe import torch_module
from torchdoctor.observe.crash.explain import SILENT, Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.rules.api.module_init_not_called import RULE as NO_INIT
from torchdoctor.rules.api.weights_only_load_failed import RULE as WEIGHTS_ONLY

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

_GLOBAL = re.compile(r"Unsupported global: GLOBAL (?P<name>[\w.]+)")
_NO_INIT = re.compile(
    r"cannot assign (?:module|parameters) before Module\.__init__\(\) call"
    r"|'(?P<cls>\w+)' object has no attribute '_(?:backward_hooks|forward_hooks|forward_pre_hooks|parameters|buffers|modules)'"
)


def torchrun_child_failed(crash: Crash, session: Holdings | None) -> object | None:
    """torchrun's launcher only relays a rank's failure (or the signal that stopped the job);
    the ranks report what happened."""
    return SILENT if crash.exc_type in ("ChildFailedError", "SignalException") else None


def weights_only(crash: Crash, session: Holdings | None) -> Explanation | None:
    if "Weights only load failed" not in crash.message:
        return None
    found = _GLOBAL.search(crash.message)
    if found is None:
        return Explanation(WEIGHTS_ONLY, {})
    name = found["name"]
    if name.startswith("torch.nn.modules."):
        return Explanation(WEIGHTS_ONLY, {"name": name}, variant="whole-module")
    return Explanation(WEIGHTS_ONLY, {"name": name, "cls": name.split(".")[-1]}, variant="global")


def module_init_not_called(crash: Crash, session: Holdings | None) -> Explanation | None:
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


#: where these explainers are tried: lower first (core/plugins.py)
ORDER = 10
EXPLAINERS = (torchrun_child_failed, weights_only, module_init_not_called)
