"""`Trainer(callbacks=[TorchDoctorCallback()])`: torchdoctor's run detectors in a Lightning fit.

```python
from lightning.pytorch import Trainer
from torchdoctor.integrations.lightning import TorchDoctorCallback

trainer = Trainer(callbacks=[TorchDoctorCallback(fail_on="error", output="torchdoctor.html")])
trainer.fit(model, datamodule)
```

Observation starts at the fit's `setup` (before `configure_optimizers`, so an optimizer that
leaves parameters out is seen being built) and ends with the fit, or with its crash (explained
at the user's line). The findings point at the user's `LightningModule` lines; their counts go
to every logger of the trainer (`torchdoctor/errors`, `/warnings`, `/info`), the findings as
text to loggers that take text (TensorBoard), and the text report is printed on rank 0.
Options: see `FitObserver` (`select`, `ignore`, `fail_on`, `print_report`, `output`).

Uses `lightning.pytorch` (`pip install torchdoctor[lightning]`), or the older
`pytorch_lightning` package when only that is installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torchdoctor.integrations.observer import FitObserver, TorchDoctorError

if TYPE_CHECKING:
    from lightning.pytorch import Callback
else:
    try:
        from lightning.pytorch import Callback
    except ImportError:  # pragma: no cover - the standalone package
        try:
            from pytorch_lightning import Callback
        except ImportError:
            raise ImportError(
                "torchdoctor.integrations.lightning needs Lightning: pip install 'torchdoctor[lightning]'"
            ) from None

__all__ = ["TorchDoctorCallback", "TorchDoctorError"]


class TorchDoctorCallback(Callback):
    """Observes a Lightning fit as `torchdoctor run` observes a script; `.report` after it."""

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.observer = FitObserver(**options)

    @property
    def report(self) -> Any:
        return self.observer.report

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if stage == "fit":
            self.observer.start()

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        report = self.observer.stop(main_process=trainer.is_global_zero)
        if report is not None:
            _log(trainer, report)
            self.observer.check()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        if isinstance(exception, TorchDoctorError):
            return
        report = self.observer.stop(exception, main_process=trainer.is_global_zero)
        if report is not None:
            _log(trainer, report)


def _log(trainer: Any, report: Any) -> None:
    from torchdoctor.renderers.tensorboard import findings_markdown

    step = int(getattr(trainer, "global_step", 0))
    for logger in getattr(trainer, "loggers", []):
        logger.log_metrics(report.metrics(), step=step)
        add_text = getattr(getattr(logger, "experiment", None), "add_text", None)  # TensorBoard's SummaryWriter
        if callable(add_text):
            add_text("torchdoctor/findings", findings_markdown(report), step)
        logger.save()
