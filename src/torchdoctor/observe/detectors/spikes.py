"""TD496: a loss spike, the batch behind it, and whether the training got over it.

Each loss handed to `backward()` on the CPU is read (one `float()`: no device sync; losses on
a GPU are left alone, as the series recorder reads them only at the end) and compared with the
last WINDOW finite losses: a spike lies more than SIGMAS robust deviations (1.4826 x the median
absolute deviation, the modified z-score) above their median and at least RELATIVE times the
median's own size above it (a loss near zero scatters by more than its MAD says). The median and
the MAD are refreshed every REFRESH losses, so a step costs a read, an append and a comparison.

At a spike the batch the DataLoader yielded last is the one behind it: its sample indices come
from the sampler (instruments/batch_indices.py), the dataset's own ids from the batch when it
carries them, and the samples whose values stand out (by OUTLIER times the batch's median, or
not finite) are named. With `--save-bad-batches DIR` the batch and the weights that produced
the loss are written at once (the optimizer has not stepped yet). The next FOLLOW losses decide
the severity: a non-finite one, or a median that stays above the spike threshold, make it a
warning; otherwise the training recovered, and it is info. A run that steps with a closure
(LBFGS) is not judged: the line search evaluates the loss at trial points inside each step.
"""

from __future__ import annotations

import math
import os
import statistics
from collections import Counter, deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from torchdoctor.core.finding import Severity
from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Backward, Batch, Step
from torchdoctor.observe.instruments.batch_indices import BatchIndices
from torchdoctor.observe.instruments.clipping import GradientClipping
from torchdoctor.observe.instruments.series import unscaled_loss
from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.support import place, setting
from torchdoctor.rules.numerics.loss_spike import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

WINDOW = 50
#: losses seen before the first test
MIN_LOSSES = 8
REFRESH = 8
SIGMAS = 10.0
RELATIVE = 1.0
#: losses after a spike that decide whether the training recovered
FOLLOW = 10
#: at the end of the run, fewer losses than this after a spike tell nothing of a lasting rise
FOLLOW_MIN = 3
#: a sample stands out when its largest magnitude is this many times the batch's median one
OUTLIER = 100.0
MAX_REPORTS = 5
MAX_FILES = 4
MAX_FILE_BYTES = 256 * 2**20
#: the dataset's own ids, when its batches are mappings that carry them
ID_KEYS = ("id", "ids", "idx", "index", "indices", "sample_id", "sample_ids", "uid")
SHOWN = 16
ENV_SAVE = "TORCHDOCTOR_SAVE_BAD_BATCHES"


class LossSpikes(Detector):
    ORDER = 135
    rules = (RULE,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        self._window: deque[float] = deque(maxlen=WINDOW)
        self._seen = 0
        self._threshold = math.inf
        self._stats: tuple[float, float] = (math.nan, math.nan)  # median, robust deviation
        self._batch: Any = None
        self._indices: Any = None
        self._loader: Any = None
        self._pending: dict[str, Any] | None = None
        self._reports = 0
        self._files = 0
        self._done = False
        self._clipping: Any = None  # the GradientClipping instrument when installed, False when not

    def install(self) -> None:
        self._indices_of = self.ctx.instrument(BatchIndices)

    def on_batch(self, event: Batch) -> None:
        self._batch = event.batch
        self._loader = event.loader
        self._indices = self._indices_of.of(event.iterator)

    def on_step(self, event: Step) -> None:
        if event.closure:  # LBFGS: its line search evaluates the loss at trial points, and a bad one is no spike
            self._done, self._pending = True, None

    def on_backward(self, event: Backward) -> None:
        if self._done or not event.tensors:
            return
        loss = event.tensors[0]
        if not isinstance(loss, torch.Tensor) or not loss.is_cpu or loss.numel() != 1 or not loss.is_floating_point():
            return
        if self._clipping is None:
            self._clipping = self.ctx.installed(GradientClipping) or False
        if self._clipping:  # a GradScaler's loss is read unscaled
            value = unscaled_loss(self.ctx, loss)
            if value is None:
                return
            number = value.item()
        else:
            number = loss.item()
        pending = self._pending
        if pending is not None:
            pending["after"].append(number)
            if not math.isfinite(number) or len(pending["after"]) >= FOLLOW:
                self._decide(pending)
            return
        if not math.isfinite(number):
            return  # NaN has its own rules (TD145, TD490)
        self._seen += 1
        if number > self._threshold and self._seen > MIN_LOSSES:
            self._spike(number)
            return
        self._window.append(number)
        if (self._seen % REFRESH == 0 or self._seen == MIN_LOSSES) and len(self._window) >= MIN_LOSSES:
            median = statistics.median(self._window)
            deviation = 1.4826 * statistics.median([abs(v - median) for v in self._window])
            self._stats = (median, deviation)
            self._threshold = median + max(SIGMAS * deviation, RELATIVE * abs(median), 1e-12)

    def on_finish(self, outcome: Outcome) -> None:
        if self._pending is not None:
            self._decide(self._pending, ended=True)

    # -- a spike --------------------------------------------------------------------------------

    def _spike(self, loss: float) -> None:
        median, deviation = self._stats
        step = self._step()
        batch = self._batch
        indices = _as_list(self._indices)
        pending: dict[str, Any] = {
            "loss": loss, "median": median, "deviation": deviation, "step": step, "threshold": self._threshold,
            "at": caller_in_user_code() or None, "indices": indices, "ids": _ids(batch),
            "outliers": _outliers(batch, indices), "loader": self.ctx.loaders.site_of(self._loader) if self._loader is not None else None,
            "after": [], "saved": None, "window": len(self._window),
        }
        folder = setting("save_bad_batches", ENV_SAVE, None)
        if folder and self._files < MAX_FILES:
            pending["saved"] = self._save(Path(folder), pending, batch)
        self._pending = pending
        if self.ctx.series is not None:
            self.ctx.series.table("loss").mark(step, RULE.code, f"loss spike: {loss:.4g} (median {median:.4g})")

    def _step(self) -> int:
        series = self.ctx.series
        return (series.step if series is not None else self.ctx.steps) + 1

    def _decide(self, pending: dict[str, Any], ended: bool = False) -> None:
        self._pending = None
        after = pending["after"]
        finite = [v for v in after if math.isfinite(v)]
        bad = len(finite) < len(after)
        lasting = len(finite) >= FOLLOW_MIN and statistics.median(finite) > pending["threshold"]
        if bad:
            what = f"the loss was not finite {len(after)} loss{'es' if len(after) > 1 else ''} later"
        elif lasting:
            what = (f"the training did not recover: over the next {len(finite)} losses the median is "
                    f"{statistics.median(finite):.4g}")
        elif finite:
            what = (f"the training recovered: over the next {len(finite)} losses the median is {statistics.median(finite):.4g}"
                    + (" (the run ended)" if ended else ""))
        else:
            what = "the run ended before the next loss"
        if bad or lasting:
            self._done = True  # what follows a lasting rise is no longer the spike's distribution
        else:
            self._window.extend(finite)
        if self._reports >= MAX_REPORTS:
            return
        self._reports += 1
        deviation = pending["deviation"]
        sigmas = (pending["loss"] - pending["median"]) / deviation if deviation > 0 else math.inf
        saved = pending["saved"]
        self.ctx.report(
            RULE, at=pending["at"], key=pending["step"],
            severity=None if bad or lasting else Severity.INFO,
            fields={"loss": pending["loss"], "step": pending["step"], "sigmas": f"{sigmas:.0f}" if sigmas < 1e4 else "over 10,000",
                    "median": pending["median"], "window": pending["window"],
                    "after": what, "batch": self._describe(pending),
                    "saved": f"; it is saved in {saved} with the weights that produced the loss" if saved else ""},
            evidence={"step": pending["step"], "loss": pending["loss"], "median": pending["median"],
                      "robust_deviation": deviation, "indices": (pending["indices"] or [])[:4096], "ids": pending["ids"],
                      "outliers": pending["outliers"], "after": [v if math.isfinite(v) else str(v) for v in after],
                      **({"saved": saved} if saved else {})},
        )

    def _describe(self, pending: dict[str, Any]) -> str:
        indices, ids, outliers = pending["indices"], pending["ids"], pending["outliers"]
        if indices is None:
            text = "its sample indices are unknown (not from a map-style DataLoader)"
        else:
            text = f"samples {_shown(indices)} as the sampler drew them"
            if pending["loader"]:
                text += f" from the DataLoader built at {place(pending['loader'])}"
        if ids:
            text += f"; the dataset's ids {_shown(ids)}"
        if outliers:
            text += "; " + "; ".join(outliers[:3])
        return text

    def _save(self, folder: Path, pending: dict[str, Any], batch: Any) -> str | None:
        """The batch, its indices and the weights of every model now (before the step), in one file."""
        size = sum(t.numel() * t.element_size() for t in _tensors(batch))
        if batch is None or size > MAX_FILE_BYTES:
            return None
        models: dict[str, Any] = {}
        names: Counter[str] = Counter()
        for root in self.ctx.model_roots():
            weights = sum(t.numel() * t.element_size() for t in root.state_dict().values() if isinstance(t, torch.Tensor))
            if size + weights > MAX_FILE_BYTES:
                continue
            size += weights
            name = type(root).__name__
            names[name] += 1
            models[name if names[name] == 1 else f"{name} #{names[name]}"] = root.state_dict()
        path = folder / f"spike-step{pending['step']}-pid{os.getpid()}.pt"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            torch.save({"step": pending["step"], "loss": pending["loss"], "median": pending["median"],
                        "indices": pending["indices"], "ids": pending["ids"], "batch": batch, "models": models,
                        "torch": torch.__version__}, path)
        except Exception:  # noqa: BLE001 - an unwritable folder or an unpicklable batch: no file, the finding stays
            return None
        self._files += 1
        return str(path)


def _as_list(index: Any) -> list[int] | None:
    if index is None:
        return None
    if isinstance(index, torch.Tensor):
        index = index.tolist()
    if isinstance(index, int):
        return [index]
    if isinstance(index, (list, tuple)) and all(isinstance(i, int) for i in index):
        return list(index)
    return None


def _ids(batch: Any) -> list[Any] | None:
    if not isinstance(batch, dict):
        return None
    for key in ID_KEYS:
        value = batch.get(key)
        if isinstance(value, torch.Tensor) and value.dim() == 1 and not value.is_floating_point():
            return value.tolist()[:4096]
        if isinstance(value, (list, tuple)) and all(isinstance(v, (int, str)) for v in value):
            return list(value)[:4096]
    return None


def _tensors(batch: Any, path: str = "batch", depth: int = 0) -> list[torch.Tensor]:
    return [t for _, t in _named(batch, path, depth)]


def _named(batch: Any, path: str = "batch", depth: int = 0) -> list[tuple[str, torch.Tensor]]:
    if isinstance(batch, torch.Tensor):
        return [(path, batch)]
    if depth > 3:
        return []
    if isinstance(batch, dict):
        return [pair for key, value in batch.items() for pair in _named(value, f"{path}[{key!r}]", depth + 1)]
    if isinstance(batch, (list, tuple)):
        return [pair for i, value in enumerate(batch) for pair in _named(value, f"{path}[{i}]", depth + 1)]
    return []


def _outliers(batch: Any, indices: list[int] | None) -> list[str]:
    """The samples whose values stand out of the batch: not finite, or OUTLIER times its median magnitude."""
    found = []
    with torch.no_grad():
        for name, tensor in _named(batch):
            if not tensor.is_floating_point() or tensor.dim() < 1 or tensor.shape[0] < 2 or tensor.device.type != "cpu":
                continue
            size = tensor.detach().reshape(tensor.shape[0], -1).abs().amax(dim=1).float()
            finite = size.isfinite()
            median = float(size[finite].median()) if bool(finite.any()) else math.nan
            for position in range(int(size.shape[0])):
                value = float(size[position])
                if math.isfinite(value) and not (median > 0 and value >= OUTLIER * median):
                    continue
                sample = indices[position] if indices is not None and position < len(indices) else None
                who = f"sample {sample} (row {position})" if sample is not None else f"row {position}"
                how = "is not finite" if not math.isfinite(value) else f"reaches {value:.3g} where the batch's median is {median:.3g}"
                found.append(f"{who}: `{name}` {how}")
                if len(found) >= 8:
                    return found
    return found


def _shown(values: list[Any]) -> str:
    text = ", ".join(str(v) for v in values[:SHOWN])
    return f"[{text}{', ...' if len(values) > SHOWN else ''}]"
