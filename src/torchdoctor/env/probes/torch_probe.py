"""Runs in a fresh interpreter: `python -m torchdoctor.env.probes.torch_probe [--toolkit=X.Y] [MODULE=PACKAGE ...]`.

It imports torch the way a training script would and prints one JSON object per line: first
`{"torch": {...}}` (see `TorchFacts`), then `{"gcc_range": [min, max]}` (the host compilers
torch's cpp_extension accepts for the CUDA toolkit X.Y), then one `{"import": {...}}` per
extension module named on the command line. A fresh interpreter is used because a broken install can crash or poison
the process that imports it; the parent only reads what was printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any

from torchdoctor.env import versions
from torchdoctor.env.text import one_line

NUMPY1_MESSAGE = "compiled using NumPy 1.x"
_LIBRARIES = re.compile(r"/(lib(?:cudart|cudnn|nccl|cublas|cublasLt|cusparse|cufft|curand|nvrtc|nvJitLink)[^/]*\.so[.\d]*)$")


@contextlib.contextmanager
def captured_stderr() -> Iterator[list[str]]:
    """Everything written to file descriptor 2 (C code included) while the block runs."""
    sink: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as spool:
        os.dup2(spool.fileno(), 2)
        try:
            yield sink
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            spool.seek(0)
            sink.append(spool.read().decode(errors="replace"))


def torch_facts() -> dict[str, Any]:
    failure: str | None
    with captured_stderr() as err:
        try:
            import torch
        except BaseException as exc:  # noqa: BLE001 - any failure to import is the fact
            failure = one_line(exc)
        else:
            failure = None
    if failure is not None:
        return {"importable": False, "import_error": failure}
    facts: dict[str, Any] = {
        "importable": True,
        "version": torch.__version__,
        "path": os.path.dirname(torch.__file__),
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "cxx11_abi": bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", False)),
        "compiler": _compiler(torch.__config__.show()),
        "num_threads": torch.get_num_threads(),
    }
    if NUMPY1_MESSAGE in err[0]:
        facts["numpy_error"] = f"importing torch: {NUMPY1_MESSAGE}"
    facts.update(_numpy_exchange(torch, facts.get("numpy_error")))
    facts.update(_cuda(torch))
    facts["mapped_libraries"] = mapped_libraries()
    facts["bundled_libraries"] = bundled_libraries(os.path.dirname(facts["path"]), facts["mapped_libraries"])
    return facts


def _compiler(config: str) -> str | None:
    match = re.search(r"^\s*-\s*((?:GCC|Clang|clang|MSVC|Apple clang)[^\n]*)$", config, re.M)
    return match.group(1).strip() if match else None


def _numpy_exchange(torch: Any, seen: str | None) -> dict[str, Any]:
    try:
        import numpy
    except ImportError:
        return {}
    try:
        torch.from_numpy(numpy.zeros(2)).numpy()
    except Exception as exc:  # noqa: BLE001
        return {"numpy_error": seen or one_line(exc)}
    return {}


def _cuda(torch: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    if not torch.version.cuda:
        return facts
    facts["arch_list"] = list(torch.cuda.get_arch_list())
    facts["cuda_releases"] = sorted(getattr(torch.cuda, "PYTORCH_RELEASES_CODE_CC", {}), key=versions.numbers)
    try:
        facts["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
    except Exception:  # noqa: BLE001 - not built with NCCL
        pass
    with warnings.catch_warnings(record=True) as caught, captured_stderr():
        warnings.simplefilter("always")
        available = torch.cuda.is_available()
    facts["cuda_available"] = available
    messages = [str(w.message).strip() for w in caught]
    if not available and messages:
        facts["cuda_error"] = " ".join(messages[0].split())[:500]
    if available:
        facts["gpus"] = [_gpu(torch, i) for i in range(torch.cuda.device_count())]
        try:
            facts["cudnn"] = versions.cudnn(torch.backends.cudnn.version())
            facts["cudnn_compiled"] = ".".join(map(str, torch._C._cudnn.getCompileVersion()))
        except Exception:  # noqa: BLE001 - no cuDNN in this build
            pass
    return facts


def _gpu(torch: Any, index: int) -> dict[str, Any]:
    major, minor = torch.cuda.get_device_capability(index)
    props = torch.cuda.get_device_properties(index)
    gpu = {
        "index": index,
        "name": props.name,
        "capability": f"{major}.{minor}",
        "memory_mib": props.total_memory // (1 << 20),
    }
    arch_list = torch.cuda.get_arch_list()
    check = getattr(torch.cuda, "_code_compatible_with_device", None)
    if arch_list and check is not None:
        codes = [int(a.split("_", 1)[1].rstrip("af")) for a in arch_list]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gpu["supported"] = any(check(10 * major + minor, code) for code in codes)
    return gpu


def mapped_libraries() -> dict[str, str]:
    """CUDA libraries this process actually loaded, and from where (Linux only)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return {}
    found: dict[str, str] = {}
    for line in lines:
        match = _LIBRARIES.search(line)
        if match:
            found.setdefault(match.group(1), line.split(None, 5)[-1])
    return found


def library_base(name: str) -> str:
    """`libcudnn.so.9.1.0` -> `libcudnn`."""
    return name.split(".so", 1)[0]


def bundled_libraries(site: str, mapped: dict[str, str]) -> dict[str, str]:
    """For each loaded CUDA library, the copy shipped with the wheel (torch/lib, nvidia/*/lib)."""
    bases = {library_base(name) for name in mapped}
    found: dict[str, str] = {}
    folders = [os.path.join(site, "torch", "lib")]
    nvidia = os.path.join(site, "nvidia")
    if os.path.isdir(nvidia):
        folders += [os.path.join(nvidia, sub, "lib") for sub in sorted(os.listdir(nvidia))]
    for folder in folders:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            base = library_base(name)
            if base in bases and ".so" in name:
                found.setdefault(base, os.path.join(folder, name))
    return found


def import_result(module: str, package: str | None) -> dict[str, Any]:
    import importlib

    with captured_stderr() as err:
        try:
            importlib.import_module(module)
        except BaseException as exc:  # noqa: BLE001
            failure: str | None = one_line(exc)
        else:
            failure = None
    result: dict[str, Any] = {"module": module, "package": package, "ok": failure is None, "error": failure}
    if NUMPY1_MESSAGE in err[0]:
        result["numpy1"] = True
    return result


def emit(key: str, value: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({key: value}) + "\n")
    sys.stdout.flush()


def gcc_range(toolkit: str) -> list[str]:
    """cpp_extension's [min, max exclusive] g++ versions for nvcc `toolkit` ([] if it has none)."""
    try:
        with captured_stderr():
            from torch.utils import cpp_extension
        bounds = getattr(cpp_extension, "CUDA_GCC_VERSIONS", {}).get(toolkit)
    except Exception:  # noqa: BLE001 - older torch, or cpp_extension cannot import
        return []
    return [".".join(map(str, bound)) for bound in bounds] if bounds else []


def main(argv: list[str]) -> int:
    facts = torch_facts()
    emit("torch", facts)
    if not facts.get("importable"):
        return 0
    for item in argv:
        if item.startswith("--toolkit="):
            emit("gcc_range", {"range": gcc_range(item.split("=", 1)[1])})
        else:
            module, _, package = item.partition("=")
            emit("import", import_result(module, package or None))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
