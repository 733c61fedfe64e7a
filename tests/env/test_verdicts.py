"""Each verdict on both sides: facts that must be flagged and similar facts that must not."""

from __future__ import annotations

import pytest

from tests.env.conftest import A100, CUDA_TORCH, codes, facts_of
from torchdoctor.core.finding import Severity
from torchdoctor.env.verdicts import RULES, VERDICTS, judge, judge_by_group
from torchdoctor.env.verdicts.gpu import arch_supported, visible_ordinals

NVIDIA = {"driver": "550.54.15", "driver_cuda": "12.4", "gpus": [A100]}


def test_a_healthy_gpu_machine_has_no_finding() -> None:
    torch = {**CUDA_TORCH, "gpus": [{**A100, "supported": True}], "num_threads": 8,
             "cudnn": "9.1.0", "cudnn_compiled": "9.1.0"}
    assert codes(torch=torch, nvidia=NVIDIA, limits={"cpus_online": 16, "cpus_affinity": 16, "shm_bytes": 1 << 34,
                                                     "nofile_soft": 65536, "nofile_hard": 65536}) == []


def test_nothing_collected_means_nothing_reported() -> None:
    assert codes() == []


def test_every_rule_belongs_to_one_group() -> None:
    listed = [code for group in RULES.values() for code in group]
    assert len(listed) == len(set(listed)) and set(RULES) == set(VERDICTS)
    assert set(listed) == {f"TD6{n:02d}" for n in range(18)}


@pytest.mark.parametrize(("error", "says"), [
    ("ModuleNotFoundError: No module named 'torch'", "Install torch"),
    ("ImportError: libtorch_cuda.so: undefined symbol: ncclCommInitRankConfig", "LD_LIBRARY_PATH"),
    ("OSError: libcudnn.so.9: cannot open shared object file: No such file or directory", "LD_LIBRARY_PATH"),
    ("RuntimeError: something else", "Reinstall torch"),
])
def test_import_failure_hint_follows_the_error(error: str, says: str) -> None:
    (finding,) = judge(facts_of(torch={"importable": False, "import_error": error}))
    assert finding.rule == "TD600" and finding.severity is Severity.ERROR
    assert error in finding.message and says in finding.hint


def test_cpu_wheel_hint_picks_the_newest_cuda_build_the_driver_runs() -> None:
    torch = {"importable": True, "version": "2.5.1+cpu", "cuda_releases": ["11.8", "12.1", "12.4", "12.6"]}
    (finding,) = judge(facts_of(torch=torch, nvidia=NVIDIA))
    assert finding.rule == "TD601" and "1 NVIDIA GPU(s) (NVIDIA A100-SXM4-80GB)" in finding.message
    assert "torch==2.5.1 --index-url https://download.pytorch.org/whl/cu124" in finding.hint
    assert codes(torch=torch) == []  # a CPU wheel on a machine without an NVIDIA GPU is fine
    assert codes(torch={**torch, "hip": "6.2"}, nvidia=NVIDIA) == []


def test_driver_older_by_a_major_version_is_an_error_and_by_a_minor_one_is_info() -> None:
    old = judge(facts_of(torch=CUDA_TORCH, nvidia={**NVIDIA, "driver_cuda": "11.4"}))
    assert [(f.rule, f.severity) for f in old] == [("TD602", Severity.ERROR)]
    minor = judge(facts_of(torch=CUDA_TORCH, nvidia={**NVIDIA, "driver_cuda": "12.2"}))
    assert [(f.rule, f.severity) for f in minor] == [("TD602", Severity.INFO)]
    assert codes(torch=CUDA_TORCH, nvidia={**NVIDIA, "driver_cuda": "12.6"}) == []


@pytest.mark.parametrize(("archs", "capability", "ok"), [
    (["sm_80"], "8.6", True),          # same major, newer minor runs the SASS
    (["sm_86"], "8.0", False),         # older minor cannot
    (["sm_90a"], "9.0", True),
    (["sm_90a"], "9.1", False),        # arch-specific code runs only on that exact GPU
    (["sm_80", "compute_90"], "12.0", True),   # PTX compiles just in time for newer GPUs
    (["sm_50", "sm_90"], "12.0", False),
    (["sm_70", "sm_75"], "6.1", False),
])
def test_arch_rule(archs: list[str], capability: str, ok: bool) -> None:
    assert arch_supported(archs, capability) is ok


def test_arch_verdict_prefers_torchs_own_judgement() -> None:
    said_no = {**CUDA_TORCH, "gpus": [{**A100, "supported": False}]}
    assert codes(torch=said_no, nvidia=NVIDIA) == ["TD603"]
    said_yes = {**CUDA_TORCH, "arch_list": ["sm_90"], "gpus": [{**A100, "supported": True}]}
    assert codes(torch=said_yes, nvidia=NVIDIA) == []
    # torch cannot see the GPU: the driver's compute capability is judged instead
    blind = {**CUDA_TORCH, "arch_list": ["sm_90"], "cuda_available": True}
    assert codes(torch=blind, nvidia=NVIDIA) == ["TD603"]


def test_cuda_unusable_unless_a_more_specific_cause_explains_it() -> None:
    broken = {**CUDA_TORCH, "cuda_available": False, "cuda_error": "CUDA driver initialization failed"}
    (finding,) = judge(facts_of(torch=broken, nvidia=NVIDIA))
    assert finding.rule == "TD604" and "CUDA driver initialization failed" in finding.message
    assert codes(torch=broken, nvidia={**NVIDIA, "driver_cuda": "11.4"}) == ["TD602"]
    assert codes(torch=broken, nvidia=NVIDIA, variables={"CUDA_VISIBLE_DEVICES": ""}) == ["TD616"]
    assert codes(torch=broken) == []  # no GPU on the machine: nothing to use


def test_visible_devices_parse_like_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch.cuda

    for value in ["0,1", "1,0", "", "-1", "0,-1,1", "0,0", "1gpu2,2", " 1, 2", "GPU-aa,GPU-bb", "GPU-aa,GPU-aa", "0,x,1"]:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
        assert visible_ordinals(value) == torch.cuda._parse_visible_devices(), value


@pytest.mark.parametrize(("value", "says"), [
    ("", "hides all 2 GPU(s)"),
    ("-1", "hides all 2 GPU(s)"),
    ("0,0", "repeats a device"),
    ("1,2", "names GPU 2, but the machine has 2"),
    ("0,none", "torch sees only 1 of the 2"),
])
def test_visible_devices_flagged(value: str, says: str) -> None:
    nvidia = {**NVIDIA, "gpus": [A100, {**A100, "index": 1}]}
    (finding,) = judge(facts_of(nvidia=nvidia, variables={"CUDA_VISIBLE_DEVICES": value}))
    assert finding.rule == "TD616" and says in finding.message


@pytest.mark.parametrize("value", ["0", "1,0", "0,1", "GPU-8b3e6c1a,GPU-1f2d"])
def test_visible_devices_fine(value: str) -> None:
    nvidia = {**NVIDIA, "gpus": [A100, {**A100, "index": 1}]}
    assert codes(nvidia=nvidia, variables={"CUDA_VISIBLE_DEVICES": value}) == []
    assert codes(variables={"CUDA_VISIBLE_DEVICES": ""}) == []  # no GPU: nothing hidden


def test_version_skew_by_pin_and_by_build_tag() -> None:
    torch = {"importable": True, "version": "2.5.1+cu124"}
    pinned_old = {"versions": {"torchvision": "0.19.1+cu124"}, "torch_pins": {"torchvision": "==2.4.1"}}
    (finding,) = judge(facts_of(torch=torch, packages=pinned_old))
    assert finding.message == "torchvision 0.19.1+cu124 was built for torch==2.4.1, but torch 2.5.1+cu124 is installed"
    other_build = {"versions": {"torchaudio": "2.5.1+cpu"}, "torch_pins": {"torchaudio": "==2.5.1"}}
    (finding,) = judge(facts_of(torch=torch, packages=other_build))
    assert "is a cpu build" in finding.message
    fine = {"versions": {"torchvision": "0.20.1+cu124", "torchaudio": "2.5.1+cu124", "xformers": "0.0.28"},
            "torch_pins": {"torchvision": "==2.5.1", "torchaudio": "==2.5.1", "xformers": "==2.5.1",
                           "accelerate": ">=1.10.0", "lightning": ">=2.1.0,<3.0"}}
    assert codes(torch=torch, packages=fine) == []
    assert codes(torch={"importable": True, "version": "2.6.0.dev20241112+cu124"},
                 packages={"torch_pins": {"torchvision": "==2.6.0.dev20241112"}}) == []
    assert codes(torch=torch, packages={"torch_pins": {"torchvision": "==2.5.*"}}) == []
    assert codes(torch=torch, packages={"torch_pins": {"torchvision": "==2.4.*"}}) == ["TD605"]
    assert codes(torch={"importable": True, "version": "2.6.0a0+git1234"},
                 packages={"torch_pins": {"torchvision": "==2.6.0"}}) == ["TD605"]  # a pre-release is not the release


def test_multiple_installs_names_the_one_imported() -> None:
    installs = [{"path": "/home/a/.local/lib/python3.11/site-packages/torch", "version": "2.1.0"},
                {"path": "/opt/venv/lib/python3.11/site-packages/torch", "version": "2.5.1"}]
    (finding,) = judge(facts_of(packages={"torch_installs": installs}))
    assert "loads /home/a/.local/lib/python3.11/site-packages/torch (2.1.0)" in finding.message


def test_numpy_and_extension_failures() -> None:
    torch = {"importable": True, "version": "2.5.1+cu124", "cxx11_abi": True}
    symbol = {"module": "fa", "package": "flash-attn", "ok": False, "error": "ImportError: fa.so: undefined symbol: _ZN3c10"}
    numpy1 = {"module": "scatter", "package": "torch-scatter", "ok": False, "error": "ImportError: A module that was compiled using NumPy 1.x", "numpy1": True}
    other = {"module": "helper", "package": "helper", "ok": False, "error": "ModuleNotFoundError: No module named 'einops'"}
    found = judge(facts_of(torch=torch, packages={"versions": {"numpy": "2.1.0"}, "imports": [symbol, numpy1, other]}))
    assert sorted((f.rule, f.message.split(" ")[0]) for f in found) == [("TD607", "scatter"), ("TD609", "flash-attn")]
    assert "_GLIBCXX_USE_CXX11_ABI=1" in next(f.hint for f in found if f.rule == "TD609")
    assert codes(torch={**torch, "numpy_error": "RuntimeError: Numpy is not available"}) == ["TD607"]


def test_skewed_package_is_not_reported_twice() -> None:
    torch = {"importable": True, "version": "2.5.1+cu124"}
    packages = {"versions": {"torchvision": "0.19.1"}, "torch_pins": {"torchvision": "==2.4.1"},
                "imports": [{"module": "torchvision", "package": "torchvision", "ok": False,
                             "error": "RuntimeError: operator torchvision::nms does not exist"}]}
    assert codes(torch=torch, packages=packages) == ["TD605"]


def test_shadowing_library_from_ld_library_path() -> None:
    site = "/opt/venv/lib/python3.11/site-packages"
    bundled = {"libcudnn": f"{site}/nvidia/cudnn/lib/libcudnn.so.9", "libnccl": f"{site}/nvidia/nccl/lib/libnccl.so.2"}
    torch = {**CUDA_TORCH, "cudnn": "9.1.0", "cudnn_compiled": "9.1.0", "bundled_libraries": bundled,
             "mapped_libraries": {"libnccl.so.2": "/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.1",
                                  "libcudnn.so.9": f"{site}/nvidia/cudnn/lib/libcudnn.so.9"}}
    (finding,) = judge(facts_of(torch=torch, variables={"LD_LIBRARY_PATH": "/usr/lib/x86_64-linux-gnu"}))
    assert finding.rule == "TD608" and finding.severity is Severity.WARNING
    assert "libnccl.so.2 from /usr/lib/x86_64-linux-gnu (on LD_LIBRARY_PATH)" in finding.message
    # a conda build links the environment's own libraries: nothing shipped, nothing shadowed
    conda = {**torch, "bundled_libraries": {}, "mapped_libraries": {"libnccl.so.2": "/opt/conda/lib/libnccl.so.2"}}
    assert codes(torch=conda) == []


def test_cudnn_major_clash_is_an_error() -> None:
    site = "/opt/venv/lib/python3.11/site-packages"
    torch = {**CUDA_TORCH, "cudnn": "8.9.2", "cudnn_compiled": "9.1.0",
             "bundled_libraries": {"libcudnn": f"{site}/nvidia/cudnn/lib/libcudnn.so.9"},
             "mapped_libraries": {"libcudnn.so.8": "/usr/local/cuda/lib64/libcudnn.so.8"}}
    (finding,) = judge(facts_of(torch=torch))
    assert finding.severity is Severity.ERROR and "cuDNN 8.9.2" in finding.message


def test_build_verdicts() -> None:
    build = {"cxx": "c++", "cxx_path": "/usr/bin/c++", "cxx_version": "13.2.0", "cxx_family": "gcc",
             "cuda_home": "/usr/local/cuda-12.4", "cuda_home_source": "CUDA_HOME",
             "nvcc": "/usr/local/cuda-12.4/bin/nvcc", "nvcc_version": "12.4", "gcc_range": ["6.0.0", "14.0"]}
    assert codes(torch=CUDA_TORCH, build=build) == []
    assert codes(torch=CUDA_TORCH, build={**build, "nvcc_version": "11.8"}) == ["TD610"]
    assert codes(torch=CUDA_TORCH, build={**build, "nvcc_version": "12.6"}) == []  # torch only warns on minor
    assert codes(torch=CUDA_TORCH, build={**build, "nvcc": None, "nvcc_version": None}) == ["TD611"]
    assert codes(torch=CUDA_TORCH, build={**build, "cuda_home_source": "nvcc on PATH", "nvcc": None}) == []
    (too_new,) = judge(facts_of(torch=CUDA_TORCH, build={**build, "cxx_version": "14.2.0"}))
    assert too_new.rule == "TD612" and "g++-13" in too_new.hint
    assert codes(torch=CUDA_TORCH, build={**build, "cxx_version": "14.2.0", "cxx_family": "clang"}) == []
    cpu = {"importable": True, "version": "2.5.1+cpu"}
    assert codes(torch=cpu, build={**build, "nvcc_version": "11.8", "cxx_version": "14.2.0"}) == []


def test_limits() -> None:
    assert codes(limits={"shm_bytes": 64 << 20}) == ["TD613"]
    assert codes(limits={"shm_bytes": 2 << 30}) == []
    (nofile,) = judge(facts_of(limits={"nofile_soft": 1024, "nofile_hard": 524288}))
    assert nofile.severity is Severity.INFO and "ulimit -n 65536" in nofile.hint
    assert codes(limits={"nofile_soft": 8192, "nofile_hard": 8192}) == []


def test_oversubscription_counts_affinity_and_quota() -> None:
    (quota,) = judge(facts_of(torch={"importable": True, "num_threads": 32},
                              limits={"cpus_online": 64, "cpus_affinity": 64, "cpu_quota": 4.0}))
    assert "may only use 4 CPU(s) (cgroup CPU quota 4)" in quota.message and quota.category.value == "performance"
    (affinity,) = judge(facts_of(torch={"importable": True, "num_threads": 2}, variables={"OMP_NUM_THREADS": "4"},
                                 limits={"cpus_online": 2, "cpus_affinity": 1}))
    assert "(OMP_NUM_THREADS=4)" in affinity.message and "affinity 1 of 2" in affinity.message
    assert codes(torch={"importable": True, "num_threads": 4}, limits={"cpus_online": 64, "cpu_quota": 4.0}) == []
    assert codes(torch={"importable": True, "num_threads": 4}, limits={"cpus_online": 64, "cpu_quota": 3.5}) == []
    assert codes(variables={"OMP_NUM_THREADS": "8"}, limits={"cpus_online": 4}) == ["TD615"]


def test_debug_variables() -> None:
    found = judge(facts_of(variables={"CUDA_LAUNCH_BLOCKING": "1", "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
                                      "PYTORCH_NO_CUDA_MEMORY_CACHING": "0"}))
    assert sorted((f.message.split("=")[0], f.severity.value) for f in found) == [
        ("CUDA_LAUNCH_BLOCKING", "warning"), ("TORCH_DISTRIBUTED_DEBUG", "info")]
    assert codes(variables={"TORCH_DISTRIBUTED_DEBUG": "INFO", "CUDA_LAUNCH_BLOCKING": "0"}) == []


def test_findings_have_no_source_location() -> None:
    for findings in judge_by_group(facts_of(limits={"shm_bytes": 1}, variables={"CUDA_LAUNCH_BLOCKING": "1"})).values():
        assert all(f.file is None and f.line is None for f in findings)

