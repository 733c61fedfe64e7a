"""`Trainer(callbacks=[TorchDoctorCallback()])`: torchdoctor's run detectors in a Hugging Face
`transformers.Trainer` training.

```python
from transformers import Trainer
from torchdoctor.integrations.huggingface import TorchDoctorCallback

trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[TorchDoctorCallback(fail_on="error")])
trainer.train()
```

Observation runs from `on_train_begin` to `on_train_end`. The findings' counts are added to
every log the trainer writes after they are found (`torchdoctor/errors`, `/warnings`, `/info`
in `state.log_history`, and to the loggers listed after this callback); when `report_to`
includes TensorBoard, the findings and counts are written as text and scalars where the
trainer's events go (see `_logging_dir`); the text report is printed by the main process. `transformers` has no event for a failed training: after an
exception, call `callback.close(exception)` to explain it and end the observation (the next
`train()` ends it otherwise). Options: see `FitObserver`.

`pip install torchdoctor[huggingface]`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from torchdoctor.integrations.observer import FitObserver, TorchDoctorError

try:
    from transformers import TrainerCallback
except ImportError:
    raise ImportError("torchdoctor.integrations.huggingface needs transformers: pip install 'torchdoctor[huggingface]'") from None

__all__ = ["TorchDoctorCallback", "TorchDoctorError"]


class TorchDoctorCallback(TrainerCallback):
    """Observes a `transformers.Trainer` training as `torchdoctor run` observes a script; `.report` after it."""

    def __init__(self, **options: Any) -> None:
        self.observer = FitObserver(**options)
        self._main = True

    @property
    def report(self) -> Any:
        return self.observer.report

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._main = bool(getattr(state, "is_world_process_zero", True))
        self.observer.start()

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        so_far = self.observer.so_far()
        if so_far is None or not so_far.findings:
            return
        found = so_far.metrics()
        if logs is not None:
            logs.update(found)  # seen by the callbacks after this one
        if state.log_history:
            state.log_history[-1].update(found)  # the trainer appended its copy of `logs` before calling us

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        report = self.close(main_process=self._main)
        if report is not None and self._main and "tensorboard" in (getattr(args, "report_to", None) or []):
            from torchdoctor.renderers import tensorboard

            tensorboard.write(report, _logging_dir(args), series=False, counts_at=int(state.global_step))
        self.observer.check()

    def close(self, exception: BaseException | None = None, *, main_process: bool = True) -> Any:
        """End the observation: after `train()` raised, with its exception (explained in the report)."""
        return self.observer.stop(exception, main_process=main_process)


def _logging_dir(args: Any) -> Path:
    """Where the trainer's TensorBoard events go: `logging_dir` (transformers 4), else
    `TENSORBOARD_LOGGING_DIR`, else a `torchdoctor` run beside the trainer's own under
    `output_dir/runs` (transformers 5 names its run by the time it started)."""
    given = getattr(args, "logging_dir", None) or os.environ.get("TENSORBOARD_LOGGING_DIR")
    return Path(os.path.expanduser(given)) if given else Path(args.output_dir) / "runs" / "torchdoctor"
