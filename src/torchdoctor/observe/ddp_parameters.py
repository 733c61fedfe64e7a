"""Which of a DistributedDataParallel model's parameters received no gradient: the crash
explainer of DDP's "Expected to have finished reduction" and the detector of unused
parameters (detectors/ddp.py) both name them."""

from __future__ import annotations

from typing import Any

from torchdoctor.core.wording import listing

SHOWN = 3


def checked_parameters(ddp: Any) -> list[tuple[str, Any]]:
    """The parameters DDP's reducer expects gradients for, in its order (DDP's error counts
    indices in this list): trainable, not ignored, each once."""
    ignored = set(getattr(ddp, "parameters_to_ignore", ()) or ())
    seen: set[int] = set()
    found = []
    for name, p in getattr(ddp, "module", ddp).named_parameters():
        if name in ignored or not p.requires_grad or id(p) in seen:
            continue
        seen.add(id(p))
        found.append((name, p))
    return found


def unused_fields(names: list[str]) -> dict[str, Any]:
    """The TD463 template fields for these parameter names (the detector and the crash say the same)."""
    return {"count": len(names), "names": listing([f"`{name}`" for name in names], SHOWN)}
