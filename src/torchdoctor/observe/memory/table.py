"""The per-owner table `torchdoctor run --memory` prints at the end, from the report's `memory` section.

No torch here: the runner draws it from what the observed processes recorded.
"""

from __future__ import annotations

from typing import Any

from torchdoctor.core.wording import size_text

OWNER_LABELS = {
    "parameters": "parameters and buffers",
    "gradients": "gradients",
    "optimizer": "optimizer state",
    "batch": "data batch",
    "dataset": "in-memory datasets",
    "activations": "activations (saved for backward)",
    "other": "other tensors",
}
PHASES = {"forward": "end of forward", "backward": "end of backward", "step": "after optimizer step", "crash": "at the crash"}


def render(process: dict[str, Any]) -> list[str]:
    """The table of one process's memory (lines of text)."""
    censuses = process.get("censuses") or []
    if not censuses:
        return ["memory: no training step was observed, so no account was taken"]
    last = censuses[-1]
    peak_census = max(censuses, key=lambda c: c.get("total", 0))
    who = f"rank {process['rank']}" if process.get("rank") is not None else f"pid {process.get('pid')}"
    rss = process.get("peak_rss")
    head = f"memory ({who}, {process.get('device', 'cpu')}): live tensor storages by owner"
    if rss:
        head += f"; process peak resident memory {size_text(rss)}"
    lines = [head]
    width = max(len(label) for label in OWNER_LABELS.values()) + 2
    last_label = f"step {last['step']}, {PHASES.get(last['phase'], last['phase'])}"
    peak_label = f"step {peak_census['step']}, {PHASES.get(peak_census['phase'], peak_census['phase'])}"
    lines.append(f"  {'owner':<{width}}{last_label:>32}  {'largest census (' + peak_label + ')':>44}")
    for owner, label in OWNER_LABELS.items():
        now, peak = last["owners"].get(owner), peak_census["owners"].get(owner)
        if not now and not peak:
            continue
        lines.append(f"  {label:<{width}}{size_text(now or 0):>32}  {size_text(peak or 0):>44}")
    lines.append(f"  {'total':<{width}}{size_text(last.get('total')):>32}  {size_text(peak_census.get('total')):>44}")
    activations = peak_census.get("activations") or {}
    if activations:
        shown = ", ".join(f"{name} {size_text(size)}" for name, size in list(activations.items())[:4])
        lines.append(f"  activations by module ({peak_label}): {shown}")
    holders = last.get("holders") or []
    if holders:
        shown = ", ".join(f"{h['name']} {size_text(h['bytes'])}" for h in holders[:4])
        lines.append(f"  other tensors held by: {shown}")
    peaks = process.get("peaks") or {}
    if peaks:
        parts = [f"{PHASES.get(phase, phase)} {size_text(value['bytes'])} (step {value['step']})" for phase, value in peaks.items()]
        lines.append(f"  peak per phase: {' · '.join(parts)}")
    for facts in process.get("allocators") or []:
        lines.append(
            f"  {facts['device']} caching allocator: {size_text(facts['allocated'])} allocated, "
            f"{size_text(facts['reserved'])} reserved, peak {size_text(facts['peak'])}, "
            f"{size_text(facts.get('inactive_split'))} cached in split blocks (fragmentation)"
        )
    return lines
