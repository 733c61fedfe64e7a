"""The facts `torchdoctor env` collects, as typed records that round-trip through JSON.

Every field may be None: "not collected" (the probe could not tell), which no verdict treats as
evidence of a problem. The JSON report carries them under `"environment"`, and rule docs give
their examples as such JSON, so a verdict can be proven on facts from any machine.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Gpu:
    """One NVIDIA GPU as nvidia-smi or torch sees it (`capability` as "8.6")."""

    index: int | None = None
    name: str | None = None
    capability: str | None = None
    memory_mib: int | None = None
    supported: bool | None = None  # torch's own verdict: does the wheel have kernels for it


@dataclass(frozen=True)
class PlatformFacts:
    python: str | None = None
    implementation: str | None = None
    executable: str | None = None
    system: str | None = None
    release: str | None = None
    machine: str | None = None
    libc: str | None = None


@dataclass(frozen=True)
class TorchFacts:
    """What `import torch` in a fresh interpreter says about the installed wheel."""

    importable: bool | None = None
    import_error: str | None = None
    version: str | None = None
    path: str | None = None
    cuda: str | None = None  # the CUDA runtime the wheel was built with (torch.version.cuda)
    hip: str | None = None
    cudnn: str | None = None  # cuDNN loaded at run time ("9.1.0")
    cudnn_compiled: str | None = None  # cuDNN the wheel was compiled against
    cuda_releases: list[str] = field(default_factory=list)  # CUDA builds published for this release
    nccl: str | None = None
    cxx11_abi: bool | None = None
    compiler: str | None = None  # "GCC 13.3", from torch.__config__.show()
    arch_list: list[str] = field(default_factory=list)
    cuda_available: bool | None = None
    cuda_error: str | None = None  # what torch said when CUDA could not be used
    gpus: list[Gpu] = field(default_factory=list)
    num_threads: int | None = None
    numpy_error: str | None = None  # torch <-> NumPy exchange failed
    mapped_libraries: dict[str, str] = field(default_factory=dict)  # libcudnn.so.9 -> path it was loaded from
    bundled_libraries: dict[str, str] = field(default_factory=dict)  # libcudnn -> the copy the wheel ships


@dataclass(frozen=True)
class Installation:
    path: str
    version: str | None = None


@dataclass(frozen=True)
class ImportResult:
    """Importing one installed package that is compiled against torch (in a fresh interpreter)."""

    module: str
    package: str | None = None
    ok: bool = True
    error: str | None = None
    numpy1: bool = False  # NumPy's "compiled using NumPy 1.x" message appeared


@dataclass(frozen=True)
class PackageFacts:
    torch_installs: list[Installation] = field(default_factory=list)  # in sys.path order
    versions: dict[str, str] = field(default_factory=dict)
    torch_pins: dict[str, str] = field(default_factory=dict)  # package -> its torch requirement
    imports: list[ImportResult] = field(default_factory=list)


@dataclass(frozen=True)
class NvidiaFacts:
    """The driver's view (nvidia-smi), independent of torch."""

    smi: str | None = None
    driver: str | None = None
    driver_cuda: str | None = None  # the newest CUDA the driver supports ("CUDA Version")
    gpus: list[Gpu] = field(default_factory=list)
    error: str | None = None
    device_nodes: bool | None = None  # /dev/nvidia0 or /proc/driver/nvidia exist


@dataclass(frozen=True)
class BuildFacts:
    """What building a C++/CUDA extension with torch.utils.cpp_extension would use."""

    cxx: str | None = None
    cxx_path: str | None = None
    cxx_version: str | None = None
    cxx_family: str | None = None  # gcc, clang or other
    cuda_home: str | None = None
    cuda_home_source: str | None = None
    nvcc: str | None = None
    nvcc_version: str | None = None
    nvcc_on_path: str | None = None
    nvcc_on_path_version: str | None = None
    gcc_range: list[str] = field(default_factory=list)  # [min, max exclusive] torch allows for that nvcc


@dataclass(frozen=True)
class LimitFacts:
    cpus_online: int | None = None
    cpus_affinity: int | None = None
    cpu_quota: float | None = None  # cgroup CPU quota in CPUs
    shm_bytes: int | None = None
    nofile_soft: int | None = None
    nofile_hard: int | None = None

    @property
    def usable_cpus(self) -> int | None:
        """CPUs this process may really use: affinity, then the cgroup quota (rounded up)."""
        counts = [c for c in (self.cpus_online, self.cpus_affinity) if c]
        if self.cpu_quota:
            counts.append(max(1, -int(-self.cpu_quota // 1)))
        return min(counts) if counts else None


@dataclass(frozen=True)
class EnvFacts:
    platform: PlatformFacts = field(default_factory=PlatformFacts)
    torch: TorchFacts = field(default_factory=TorchFacts)
    packages: PackageFacts = field(default_factory=PackageFacts)
    nvidia: NvidiaFacts = field(default_factory=NvidiaFacts)
    build: BuildFacts = field(default_factory=BuildFacts)
    limits: LimitFacts = field(default_factory=LimitFacts)
    variables: dict[str, str] = field(default_factory=dict)  # relevant variables, secrets redacted

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def from_dict(cls: type[T], data: Any) -> T:
    """Build `cls` from JSON data, recursively; unknown keys are an error (they are typos)."""
    if not isinstance(data, dict):
        raise ValueError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = set(data) - names
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown field(s) {', '.join(sorted(unknown))}")
    return cls(**{key: _convert(hints[key], value) for key, value in data.items()})


def _convert(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return from_dict(hint, value)
    if typing.get_origin(hint) is list:
        (item,) = typing.get_args(hint)
        return [_convert(item, v) for v in value]
    return value
