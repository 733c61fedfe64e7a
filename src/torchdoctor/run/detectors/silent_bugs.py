"""The silent-bug detectors (mode, data, memory, dtype, performance, clipping, frozen
parameters, checkpoint loading, learning-rate schedules), in the order the session installs them; `DETECTORS` includes them."""

from __future__ import annotations

from torchdoctor.run.detector import Detector
from torchdoctor.run.detectors.clipping import Clipping
from torchdoctor.run.detectors.dtype import Float64
from torchdoctor.run.detectors.frozen import FrozenUpdates
from torchdoctor.run.detectors.layout import SequenceFirstLayout
from torchdoctor.run.detectors.loading import LoadsMatchingNothing
from torchdoctor.run.detectors.memory import LossHistory, RetainedGraphs
from torchdoctor.run.detectors.mode import (
    DropoutInEval,
    EvalGraphs,
    EvalModeTraining,
    EvaluationInTrainMode,
    FrozenBatchNormDrift,
)
from torchdoctor.run.detectors.order import LoaderOrder
from torchdoctor.run.detectors.performance import HostSyncs, PerSampleLoop
from torchdoctor.run.detectors.pixels import RawPixels
from torchdoctor.run.detectors.schedule import LearningRateCollapse
from torchdoctor.run.detectors.stalled import StalledLoss
from torchdoctor.run.detectors.worker_rng import WorkerRandomness

SILENT_BUG_DETECTORS: tuple[type[Detector], ...] = (
    EvalModeTraining,
    DropoutInEval,
    FrozenBatchNormDrift,
    EvalGraphs,
    EvaluationInTrainMode,
    LoaderOrder,
    WorkerRandomness,
    RawPixels,
    SequenceFirstLayout,
    LossHistory,
    RetainedGraphs,
    Float64,
    PerSampleLoop,
    HostSyncs,
    Clipping,
    FrozenUpdates,
    LoadsMatchingNothing,
    LearningRateCollapse,
    StalledLoss,
)
