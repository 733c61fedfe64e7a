"""The built-in runtime detectors, in the order the session installs them.

To add one: write a `Detector` subclass in a module here and list it in `DETECTORS`
(see docs/run-detectors-dev.md).
"""

from __future__ import annotations

from torchdoctor.run.detector import Detector
from torchdoctor.run.detectors.collectives import CollectiveSequence
from torchdoctor.run.detectors.compiled import CompileDoctor
from torchdoctor.run.detectors.data import WorkerFunctionsPicklable
from torchdoctor.run.detectors.ddp import DDPUnusedParameters
from torchdoctor.run.detectors.gradients import ParametersWithoutGradient
from torchdoctor.run.detectors.growth import GradientGrowth, LowPrecisionLoss, ScalerSkips, WeightDrift
from torchdoctor.run.detectors.loader_memory import LoaderHostMemory
from torchdoctor.run.detectors.loss import LossInputs
from torchdoctor.run.detectors.memory_account import MemoryAccount
from torchdoctor.run.detectors.memory_deleted import DeletedButAlive
from torchdoctor.run.detectors.memory_leaks import MemoryLeaks
from torchdoctor.run.detectors.numerics import NonFiniteLoss
from torchdoctor.run.detectors.optimizer import (
    AccumulationResets,
    GradientResets,
    OptimizerCoverage,
    StepsWithoutGradients,
)
from torchdoctor.run.detectors.pace import StepPace
from torchdoctor.run.detectors.registration import UnregisteredTrainables
from torchdoctor.run.detectors.replicas import ReplicaChecksums
from torchdoctor.run.detectors.silent_bugs import SILENT_BUG_DETECTORS

DETECTORS: tuple[type[Detector], ...] = (
    GradientResets,
    AccumulationResets,
    StepsWithoutGradients,
    OptimizerCoverage,
    UnregisteredTrainables,
    ParametersWithoutGradient,
    LossInputs,
    NonFiniteLoss,
    GradientGrowth,
    WeightDrift,
    ScalerSkips,
    LowPrecisionLoss,
    WorkerFunctionsPicklable,
    CollectiveSequence,
    StepPace,
    ReplicaChecksums,
    DDPUnusedParameters,
    CompileDoctor,
    *SILENT_BUG_DETECTORS,
    MemoryAccount,
    MemoryLeaks,
    DeletedButAlive,
    LoaderHostMemory,
)
