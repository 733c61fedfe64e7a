"""Probes against a fake machine (what this one lacks) and against this machine (what it has)."""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests import children
from torchdoctor.env.probes import build, collect, nvidia, packages, probe_torch, system
from torchdoctor.env.runner import Completed, Host, run_command

SMI_QUERY = "0, NVIDIA A100-SXM4-80GB, 8.0, 81920, 550.54.15\n1, NVIDIA A100-SXM4-80GB, 8.0, 81920, 550.54.15\n"
SMI_BANNER = """
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
"""


def fake_host(commands: dict[str, Completed | None], files: dict[str, str] | None = None,
              programs: dict[str, str] | None = None, environ: dict[str, str] | None = None) -> Host:
    """A machine whose commands answer from `commands` (keyed by the argv joined with spaces)."""
    def run(argv: Sequence[str], timeout: float) -> Completed | None:
        for key, answer in commands.items():
            if " ".join(argv).startswith(key):
                return answer
        return None
    files = files or {}
    return Host(run=run, environ=environ or {}, read=files.get, which=(programs or {}).get,
                exists=lambda path: path in files or path in (programs or {}).values())


def test_nvidia_smi_is_parsed() -> None:
    host = fake_host({"/usr/bin/nvidia-smi --query-gpu": Completed(0, SMI_QUERY), "/usr/bin/nvidia-smi": Completed(0, SMI_BANNER)},
                     programs={"nvidia-smi": "/usr/bin/nvidia-smi"})
    facts = nvidia.nvidia_facts(host)
    assert facts.driver == "550.54.15" and facts.driver_cuda == "12.4"
    assert [(g.index, g.capability, g.memory_mib) for g in facts.gpus] == [(0, "8.0", 81920), (1, "8.0", 81920)]


def test_old_nvidia_smi_without_compute_cap() -> None:
    refused = Completed(2, 'Field "compute_cap" is not a valid field to query.\n')
    host = fake_host({"/usr/bin/nvidia-smi --query-gpu=index,name,compute_cap": refused,
                      "/usr/bin/nvidia-smi --query-gpu=index,name,memory": Completed(0, "0, Tesla V100-SXM2-16GB, 16160, 470.82.01\n"),
                      "/usr/bin/nvidia-smi": Completed(0, SMI_BANNER)}, programs={"nvidia-smi": "/usr/bin/nvidia-smi"})
    facts = nvidia.nvidia_facts(host)
    assert [(g.name, g.capability) for g in facts.gpus] == [("Tesla V100-SXM2-16GB", None)] and facts.driver == "470.82.01"


def test_nvidia_smi_failure_is_a_fact_not_a_crash() -> None:
    said = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    host = fake_host({"/usr/bin/nvidia-smi": Completed(9, said)}, programs={"nvidia-smi": "/usr/bin/nvidia-smi"})
    facts = nvidia.nvidia_facts(host)
    assert facts.gpus == [] and facts.error == said
    assert nvidia.nvidia_facts(fake_host({})).smi is None


def test_build_probe_finds_cuda_home_like_cpp_extension() -> None:
    nvcc_out = Completed(0, "Cuda compilation tools, release 12.4, V12.4.131\n")
    host = fake_host(
        {"/usr/bin/c++ -dumpfullversion": Completed(0, "13.2.0\n"), "/usr/bin/c++ --version": Completed(0, "c++ (GCC) 13.2.0\n"),
         "/opt/cuda-12.4/bin/nvcc --version": nvcc_out, "/usr/local/cuda-11.8/bin/nvcc --version": Completed(0, "release 11.8, V11.8.89")},
        programs={"c++": "/usr/bin/c++", "nvcc": "/usr/local/cuda-11.8/bin/nvcc", "cuda": "/opt/cuda-12.4/bin/nvcc"},
        environ={"CUDA_HOME": "/opt/cuda-12.4"},
    )
    facts = build.build_facts(host)
    assert (facts.cxx_family, facts.cxx_version) == ("gcc", "13.2.0")
    assert (facts.cuda_home, facts.cuda_home_source, facts.nvcc_version) == ("/opt/cuda-12.4", "CUDA_HOME", "12.4")
    assert facts.nvcc_on_path_version == "11.8"
    without = build.find_cuda_home(fake_host({}, programs={"nvcc": "/usr/local/cuda-11.8/bin/nvcc"}))
    assert without == ("/usr/local/cuda-11.8", "nvcc on PATH")
    assert build.compiler_family("Ubuntu clang version 18.1.3") == "clang"


@pytest.mark.parametrize(("files", "quota"), [
    ({"/proc/self/cgroup": "0::/job\n", "/sys/fs/cgroup/job/cpu.max": "400000 100000\n"}, 4.0),
    ({"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/cpu.max": "max 100000\n"}, None),
    ({"/proc/self/cgroup": "4:cpu:/\n", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "150000", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000"}, 1.5),
    ({"/proc/self/cgroup": "4:cpu:/\n", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1", "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000"}, None),
])
def test_cgroup_quota(files: dict[str, str], quota: float | None) -> None:
    assert system.cgroup_cpu_quota(fake_host({}, files=files)) == quota


def test_torch_probe_output_of_a_cuda_machine_is_read() -> None:
    lines = [
        {"torch": {"importable": True, "version": "2.5.1+cu124", "cuda": "12.4", "cuda_available": True,
                   "arch_list": ["sm_80", "sm_90"], "gpus": [{"index": 0, "name": "H100", "capability": "9.0", "supported": True}]}},
        {"gcc_range": {"range": ["6.0.0", "14.0"]}},
        {"import": {"module": "flash_attn_2_cuda", "package": "flash-attn", "ok": True, "error": None}},
    ]
    host = fake_host({sys.executable: Completed(0, "noise\n" + "\n".join(json.dumps(line) for line in lines))})
    facts, gcc_range, imports = probe_torch(host, "12.4", [("flash_attn_2_cuda", "flash-attn")])
    assert facts.gpus[0].capability == "9.0" and gcc_range == ["6.0.0", "14.0"] and imports[0].ok


def test_a_crashing_import_becomes_an_import_failure() -> None:
    host = fake_host({sys.executable: Completed(-11, "", "Fatal Python error: Segmentation fault\n")})
    facts, _, _ = probe_torch(host, None, [])
    assert facts.importable is False and facts.import_error == "Fatal Python error: Segmentation fault"
    hung = fake_host({sys.executable: Completed(-1, "", "", timed_out=True)})
    assert "did not finish" in (probe_torch(hung, None, [])[0].import_error or "")


def test_a_hanging_extension_is_named() -> None:
    first = json.dumps({"torch": {"importable": True, "version": "2.5.1"}})
    host = fake_host({sys.executable: Completed(-1, first + "\n", "", timed_out=True)})
    _, _, imports = probe_torch(host, None, [("slowext", "slow-ext")])
    assert [(i.module, i.ok) for i in imports] == [("slowext", False)] and "did not finish" in (imports[0].error or "")


def test_torch_installs_in_sys_path_order(tmp_path: Path) -> None:
    for site, version in (("user", "2.1.0"), ("venv", "2.5.1")):
        (tmp_path / site / "torch").mkdir(parents=True)
        (tmp_path / site / "torch" / "__init__.py").write_text("")
        (tmp_path / site / "torch" / "version.py").write_text(f"__version__ = '{version}'\n")
    found = packages.torch_installs([str(tmp_path / "user"), str(tmp_path / "venv"), str(tmp_path / "user")])
    assert [(Path(i.path).parent.name, i.version) for i in found] == [("user", "2.1.0"), ("venv", "2.5.1")]


def test_dependents_and_their_compiled_modules(tmp_path: Path) -> None:
    info = tmp_path / "fastops-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fastops\nVersion: 1.0\nRequires-Dist: torch==2.5.1\n"
                                   "Requires-Dist: pytest; extra == 'test'\n")
    (info / "RECORD").write_text("fastops/__init__.py,,\nfastops/_C.cpython-311-x86_64-linux-gnu.so,,\n"
                                 "fastops_kernels.cpython-311-x86_64-linux-gnu.so,,\nfastops-1.0.dist-info/METADATA,,\n")
    optional = tmp_path / "helper-2.0.dist-info"
    optional.mkdir()
    (optional / "METADATA").write_text("Metadata-Version: 2.1\nName: helper\nVersion: 2.0\nRequires-Dist: torch; extra == 'torch'\n")
    found = packages.dependents(metadata.distributions(path=[str(tmp_path)]))
    assert found == [("fastops", "==2.5.1", ["fastops", "fastops_kernels"])]


def test_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real probes on this CPU-only machine: torch imports, no GPU, limits are read."""
    monkeypatch.setenv("TORCH_HUB_TOKEN", "probe-secret-1234")
    facts = collect(imports=False)
    import torch

    assert facts.torch.importable and facts.torch.version == torch.__version__
    assert facts.torch.cuda == torch.version.cuda and facts.torch.num_threads is not None
    assert facts.torch.cxx11_abi == torch._C._GLIBCXX_USE_CXX11_ABI
    assert facts.packages.torch_installs[0].path == os.path.dirname(torch.__file__)
    assert facts.limits.cpus_online == os.cpu_count() and facts.limits.shm_bytes
    assert facts.variables["TORCH_HUB_TOKEN"] == "***"
    assert facts.platform.python == ".".join(map(str, sys.version_info[:3]))


def test_runner_reports_missing_programs_and_timeouts() -> None:
    assert run_command(["/no/such/program"], 5) is None
    slow = run_command([sys.executable, "-c", "print('started', flush=True); import time; time.sleep(30)"], 1.5)
    assert slow is not None and slow.timed_out and "started" in slow.stdout


@pytest.fixture
def extension_folder(tmp_path: Path) -> Path:
    """A module built for NumPy 1 and a compiled module with a torch symbol that does not exist."""
    (tmp_path / "numpy1ext.py").write_text(
        "import numpy.core._multiarray_umath as umath\numath._ARRAY_API  # what import_array() of NumPy 1 does\n")
    return tmp_path


@pytest.mark.slow
def test_imports_are_checked_in_a_fresh_interpreter(extension_folder: Path) -> None:
    """Real NumPy and a real dynamic loader: their own messages are what the verdicts read."""
    import shutil
    import sysconfig

    modules = ["numpy1ext=numpy1-ext"]
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is not None:
        source = extension_folder / "badsym.c"
        source.write_text("#include <Python.h>\nextern void _ZN3c105ErrorC2ENS_14SourceLocationE(void);\n"
                          "PyMODINIT_FUNC PyInit_badsym(void) { _ZN3c105ErrorC2ENS_14SourceLocationE(); return NULL; }\n")
        target = extension_folder / f"badsym{sysconfig.get_config_var('EXT_SUFFIX')}"
        children.run([compiler, "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", str(source), "-o", str(target)], check=True)
        modules.append("badsym=flash-attn")
    env = {**os.environ, "PYTHONPATH": str(extension_folder)}
    done = children.run([sys.executable, "-m", "torchdoctor.env.probes.torch_probe", *modules],
                          capture_output=True, text=True, env=env, check=True)
    results = {r["import"]["module"]: r["import"] for r in map(json.loads, done.stdout.splitlines()) if "import" in r}
    assert results["numpy1ext"]["numpy1"] is True
    if compiler is not None:
        assert "undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationE" in results["badsym"]["error"]

