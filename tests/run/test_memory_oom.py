"""TD424: out of memory explained with the account at the failing line, and the cheapest fix that fits.

CPU: a real allocation failure under `torchdoctor run --memory-limit` (RLIMIT_DATA; torch raises
"DefaultCPUAllocator: can't allocate memory"). CUDA: this machine has no GPU, so the allocator's
message is raised by hand, after real training steps observed on CPU.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

import torchdoctor
from tests.run.conftest import torchdoctor_run

GIB = 2**30


def cuda_oom(want: str, free: str, total: str = "79.15 GiB", reserved: str = "10.00 MiB") -> torch.OutOfMemoryError:
    return torch.OutOfMemoryError(
        f"CUDA out of memory. Tried to allocate {want}. GPU 0 has a total capacity of {total} of which {free} is free. "
        f"Of the allocated memory 70.00 GiB is allocated by PyTorch, and {reserved} is reserved by PyTorch but unallocated."
    )


def crash_after(steps: int, model: nn.Module, optimizer: torch.optim.Optimizer, make: Callable[[], torch.Tensor],
                error: BaseException, before: Callable[[], None] = lambda: None) -> torchdoctor.Report:
    """Train `steps` steps, then raise `error` inside the next forward pass (as the allocator would)."""

    def fail(module: nn.Module, inputs: object, output: object) -> None:
        raise error

    with pytest.raises(type(error)), torchdoctor.watch() as watched:
        for step in range(steps + 1):
            before()
            if step == steps:
                model[-1].register_forward_hook(fail)  # type: ignore[index]
            optimizer.zero_grad()
            model(make()).pow(2).mean().backward()
            optimizer.step()
    return watched.report


def oom_finding(report: torchdoctor.Report):  # type: ignore[no-untyped-def]
    [finding] = [f for f in report.findings if f.rule == "TD424"]
    return finding


def test_activation_bound_oom_names_the_modules_and_a_fix_that_fits() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    report = crash_after(2, model, optimizer, lambda: torch.randn(512, 64), cuda_oom("2.00 MiB", "1.00 MiB"))
    finding = oom_finding(report)
    assert "at this line the tensors hold" in finding.message
    assert "activations: ReLU `1` 2.0 MiB, ReLU `3` 2.0 MiB" in finding.message
    assert finding.hint.startswith("Run the forward pass under `torch.autocast(\"cuda\", dtype=torch.bfloat16)`: that frees about")
    assert "that frees about 2.0 MiB (1.0 MiB were missing)" in finding.hint  # 2 MiB asked, 1 MiB free
    assert finding.evidence["owners"]["activations"] >= 4 * 2**20


def test_a_shortfall_no_single_fix_covers_says_so() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 1024), nn.ReLU(), nn.Linear(1024, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    report = crash_after(2, model, optimizer, lambda: torch.randn(512, 64), cuda_oom("20.00 GiB", "1.00 GiB", total="80.00 GiB"))
    assert oom_finding(report).hint.startswith("No single change frees the 19.0 GiB that were missing:")


def test_optimizer_bound_oom_suggests_less_optimizer_state() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(1024, 1024), nn.Linear(1024, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)  # two state tensors per parameter: 8 MiB
    report = crash_after(2, model, optimizer, lambda: torch.randn(2, 1024), cuda_oom("4.00 MiB", "0.50 MiB"))
    assert "Adafactor" in oom_finding(report).hint


def test_leak_bound_oom_points_at_what_keeps_tensors() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    kept: list[torch.Tensor] = []
    report = crash_after(3, model, optimizer, lambda: torch.randn(8, 64),
                         cuda_oom("1.00 MiB", "0.10 MiB"), before=lambda: kept.append(torch.randn(256, 1024)))
    assert oom_finding(report).hint.startswith("Stop keeping tensors across steps in `kept` (closure of <lambda>())")


def test_fragmentation_comes_first_when_the_message_shows_it() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    report = crash_after(1, model, optimizer, lambda: torch.randn(8, 64), cuda_oom("1.00 GiB", "0.50 GiB", reserved="30.00 GiB"))
    assert "expandable_segments:True" in oom_finding(report).hint


def test_the_memory_limit_caps_the_data_segment(tmp_path: Path) -> None:
    """What `--memory-limit` relies on, checked on this torch: under RLIMIT_DATA an allocation
    beyond the cap raises torch's own CPU allocator error, which the explainer matches."""
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent("""
        import resource, torch
        resource.setrlimit(resource.RLIMIT_DATA, (1 << 30, resource.getrlimit(resource.RLIMIT_DATA)[1]))
        try:
            torch.empty(2 << 30, dtype=torch.uint8)
        except RuntimeError as error:
            print(error)
    """))
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120).stdout
    assert "DefaultCPUAllocator: can't allocate memory: you tried to allocate 2147483648 bytes" in out
    assert resource.RLIMIT_DATA  # Linux


TRAIN = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(256, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
for step in range(20):
    x = torch.randn(8192, 256)
    optimizer.zero_grad()
    loss = model(x).logsumexp(dim=1).mean()
    loss.backward()
    optimizer.step()
"""


def memory_limit_mib() -> int:
    """What torch itself takes (its private mappings after `import torch`: about 215 MiB for the
    CPU build, 770 MiB for a CUDA build) plus 480 MiB: the script's first forward passes it."""
    probe = "import torch\nprint([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmData')][0])"
    data_kib = int(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)
    return data_kib // 1024 + 480


@pytest.mark.slow
def test_a_cpu_script_runs_out_under_the_memory_limit_and_is_explained(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    limit = memory_limit_mib()
    ran = torchdoctor_run("train.py", cwd=tmp_path, options=("--memory-limit", f"{limit}MiB", "--memory"))
    assert ran.returncode == 1, ran.stderr
    assert "DefaultCPUAllocator: can't allocate memory" in ran.stderr
    finding = ran.finding("TD424")
    assert finding["line"] in (11, 12)  # the forward pass or backward()
    shown = f"{limit:.1f} MiB" if limit < 1024 else f"{limit / 1024:.1f} GiB"
    assert f"the process under its {shown} memory limit" in finding["message"]
    assert "activations" in finding["message"] and "ReLU `1`" in finding["message"]
    assert "that frees about" in finding["hint"] or "No single change" in finding["hint"]
    memory = ran.report["memory"]["processes"][0]
    assert memory["censuses"][-1]["phase"] == "crash"  # the account up to the crash
    assert "memory (pid" in ran.stderr and "at the crash" in ran.stderr  # --memory's table


class Narrow(nn.Module):
    """A class with a layer of the same name as Wide's, defined first: the line is found from the
    live model, not by the name."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 4)


class Wide(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(2048, 1024)  # 8 MiB of weights: the largest tensor
        self.fc2 = nn.Linear(1024, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.fc1(x))


def test_the_largest_tensors_come_with_the_line_that_makes_them() -> None:
    model = nn.Sequential(Wide())
    assert Narrow().fc1.in_features == 4
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    report = crash_after(1, model, optimizer, lambda: torch.randn(4, 2048), cuda_oom("1.00 MiB", "0.10 MiB"))
    line = next(n for n, text in enumerate(Path(__file__).read_text().splitlines(), 1) if "self.fc1 = nn.Linear(2048, 1024)" in text)
    assert f"largest: parameter `0.fc1.weight` (tests/run/test_memory_oom.py:{line}) 8.0 MiB" in oom_finding(report).message


@pytest.mark.parametrize("owners, activations, holder", [
    ({"other": 100 * 2**20}, {}, True),
    ({"gradients": 100 * 2**20}, {}, False),
    ({"activations": 100 * 2**20, "batch": 2**20}, {"ReLU `1`": 100 * 2**20}, False),
    ({"activations": 100 * 2**20}, {}, False),
    ({"optimizer": 200 * 2**20, "parameters": 100 * 2**20}, {}, False),
    ({"other": 1}, {}, False),
], ids=["holder", "gradients", "activations", "activations-unnamed", "optimizer", "nothing"])
@pytest.mark.parametrize("want, free", [(None, None), (2**20, 0.0), (2**40, 0.0)], ids=["unsized", "covered", "short"])
def test_every_fix_the_account_can_pick_fills_its_variant(owners: dict[str, int], activations: dict[str, int], holder: bool,
                                                          want: float | None, free: float | None) -> None:
    """Whatever the account holds and however much was missing, the variant chosen and the facts
    passed fill TD424's templates (a mismatch raises)."""
    from types import SimpleNamespace

    from torchdoctor.observe.crash.memory import Request, _cheapest
    from torchdoctor.observe.memory.census import Census
    from torchdoctor.rules.memory.out_of_memory import RULE

    census = Census(step=1, phase="crash", owners=owners, activations=activations)
    if holder:
        census.holders = {"kept": SimpleNamespace(label="`kept`", total=owners["other"])}  # type: ignore[dict-item]
    request = Request("x", want, "the GPU", None, free, False, True)
    variant, fields = _cheapest(census, request, None)
    finding = RULE.finding(fields={"want": "x", "device": "the GPU", "held": ""} | fields, variant=variant)
    assert finding.hint.endswith(".") and "{" not in finding.hint
