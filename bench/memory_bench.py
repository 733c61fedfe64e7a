"""Benchmark: what the memory account costs, and whether it agrees with the allocator.

1. Cost. The training script of bench/run_bench.py (a small CNN, batch 64, 300 steps, a
   shuffled DataLoader) runs under plain `python` and under `torchdoctor run --select memory`
   (the session and the memory detectors only: the account, TD424, TD440, TD441, TD442),
   interleaved over several rounds, alternating which goes first. Step time is the CPU time of
   the training thread; the first steps (the full accounting of the warm-up) are left out. The
   ratio of the medians is the steady-state cost (target <= 1.03); the ratio of the means, which
   includes the periodic censuses (steps 32, 64, 128, 256), is printed too.

2. Accuracy. Each lab program (examples/lab, buggy and fixed; not those that call torch.compile,
   whose caches and workspaces no Python name holds) trains 12 steps in this process
   under `torchdoctor.watch()`, inside the PyTorch profiler with memory profiling on from before
   the program builds anything: the profiler sees every CPU allocation and free, with the
   allocator's running total. At the end of steps 1-4 and 8 (the account's censuses), a tensor
   of a unique size is allocated and freed: its allocation event carries the total of live
   allocations at that moment, the independent ground truth. The census total must be within
   5 % of it (and within 4 KiB for the tiniest programs, where one stray scalar is a percent).

    python bench/memory_bench.py [--rounds 11] [--steps 300] [--accuracy-only | --cost-only]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LAB = HERE.parent / "examples" / "lab"
COST_TARGET = 1.03
ACCURACY = 0.05
SLACK = 4096
SENTINEL = 7_919_000  # bytes; + the step number: a size nothing else allocates

sys.path.insert(0, str(HERE))
from run_bench import TRAINING  # noqa: E402 - the same realistic script as run_bench


def cost(rounds: int, steps: int, skip: int) -> float:
    plain_cmd = [sys.executable]
    observed_cmd = [sys.executable, "-m", "torchdoctor", "run", "--fail-on", "never", "--select", "memory,TD442"]
    results: dict[str, list[tuple[float, float]]] = {"python": [], "memory": []}
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "train_cnn.py"
        script.write_text(TRAINING.replace('"median": statistics.median(times[skip:]),',
                                           '"median": statistics.median(times[skip:]), "mean": statistics.mean(times[skip:]),'),
                          encoding="utf-8")
        out = Path(folder) / "result.json"
        env = dict(os.environ, OMP_NUM_THREADS="1")
        for round_ in range(rounds):
            order = [("python", plain_cmd), ("memory", observed_cmd)]
            if round_ % 2:
                order.reverse()
            for name, command in order:
                subprocess.run([*command, str(script), str(out), str(steps), str(skip)], check=True, capture_output=True, env=env)
                data = json.loads(out.read_text())
                results[name].append((float(data["median"]), float(data["mean"])))
            plain, observed = results["python"][-1], results["memory"][-1]
            print(f"round {round_ + 1}: python {plain[0] * 1e3:.2f} ms/step, with the memory account {observed[0] * 1e3:.2f} "
                  f"ms/step (CPU time, median), ratio {observed[0] / plain[0]:.3f}", flush=True)
    median = statistics.median(m for m, _ in results["memory"]) / statistics.median(m for m, _ in results["python"])
    mean = statistics.median(m for _, m in results["memory"]) / statistics.median(m for _, m in results["python"])
    print(f"steady-state step time with the memory account / python: {median:.3f} (median of {rounds} rounds, {steps} steps "
          f"each, first {skip} excluded; target <= {COST_TARGET}); mean step time including the censuses: {mean:.3f}")
    return median


def own_time(steps: int, skip: int) -> tuple[float, float, float]:
    """The same training in this process under `torchdoctor.watch()`, with the memory detectors'
    own methods timed (CPU time of this thread): (median step time, median time of the memory
    detectors per step, their mean per step including the censuses). A measure that the
    machine's load does not drown: it times only what the account adds."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    import torchdoctor
    from torchdoctor.observe.detectors.loader_memory import LoaderHostMemory
    from torchdoctor.observe.detectors.memory_account import MemoryAccount
    from torchdoctor.observe.detectors.memory_deleted import DeletedButAlive
    from torchdoctor.observe.detectors.memory_leaks import MemoryLeaks

    spent: list[float] = [0.0]
    originals = []
    for kind in (MemoryAccount, MemoryLeaks, DeletedButAlive, LoaderHostMemory):
        for name in ("on_loss", "on_backward", "on_backward_end", "on_step_end", "on_batch", "on_loader_iter", "_census"):
            method = kind.__dict__.get(name)
            if method is None:
                continue
            originals.append((kind, name, method))

            def timed(self: Any, *args: Any, _method: Any = method) -> Any:
                started = time.thread_time()
                try:
                    return _method(self, *args)
                finally:
                    spent[0] += time.thread_time() - started

            setattr(kind, name, timed)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    images, labels = torch.randn(2048, 3, 32, 32), torch.randint(0, 10, (2048,))
    loader = DataLoader(TensorDataset(images, labels), batch_size=64, shuffle=True, drop_last=True)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    step_times: list[float] = []
    own: list[float] = []
    try:
        with torchdoctor.watch(select=["memory", "TD442"]):
            while len(step_times) < steps:
                for x, y in loader:
                    started, before = time.thread_time(), spent[0]
                    optimizer.zero_grad()
                    loss = criterion(model(x), y)
                    loss.backward()
                    optimizer.step()
                    step_times.append(time.thread_time() - started)
                    own.append(spent[0] - before)
                    if len(step_times) == steps:
                        break
    finally:
        for kind, name, method in originals:
            setattr(kind, name, method)
    return statistics.median(step_times[skip:]), statistics.median(own[skip:]), statistics.mean(own[skip:])


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"bench_{path.parent.name}_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _truths(profile: Any) -> dict[int, int]:
    """step -> live CPU bytes just before the sentinel of that step was allocated."""
    import torch

    found: dict[int, int] = {}

    def walk(events: Any) -> None:
        for event in events:
            fields = event.extra_fields
            if isinstance(fields, torch._C._profiler._ExtraFields_Allocation):
                size = int(fields.alloc_size)
                if SENTINEL <= size < SENTINEL + 10_000:
                    found[size - SENTINEL] = int(fields.total_allocated) - size
            walk(event.children)

    walk(profile.profiler.kineto_results.experimental_event_tree())
    return found


def accuracy_of(path: Path, steps: int = 12) -> list[tuple[int, int, int]]:
    """(step, census total, ground truth) at each census of the program's training."""
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook
    from torch.profiler import ProfilerActivity, profile

    import torchdoctor
    from torchdoctor.observe.detectors.memory_account import MemoryState
    from torchdoctor.observe.session import Session

    module = _load(path)
    totals: dict[int, int] = {}
    torch.set_num_threads(1)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        # the allocator's running total outlives a profile (allocations from an earlier one, freed
        # while none ran, are never taken off it): a sentinel at the start measures that offset
        torch.empty(SENTINEL, dtype=torch.uint8)
        with torchdoctor.watch() as _watched, contextlib.redirect_stdout(io.StringIO()):
            session = Session.current()
            assert session is not None

            def sentinel(optimizer: Any, args: Any, kwargs: Any) -> None:
                state = session.installed(MemoryState)
                census = state.timeline.last if state is not None else None
                if census is not None and census.step == session.steps and census.phase == "step" and census.step not in totals:
                    totals[census.step] = census.total
                    del census
                    torch.empty(SENTINEL + session.steps, dtype=torch.uint8)  # freed at once

            handle = register_optimizer_step_post_hook(sentinel)
            try:
                arguments = {"epochs": 1} if "epochs" in module.train.__code__.co_varnames else {"steps": steps}
                with contextlib.suppress(Exception):
                    module.train(**arguments)
            finally:
                handle.remove()
    truths = _truths(prof)
    offset = truths.pop(0, 0)
    return [(step, totals[step], truths[step] - offset) for step in sorted(totals) if step in truths]


def measured(path: Path) -> list[tuple[int, int, int]]:
    """`accuracy_of` in a fresh process: the profiler's running total is the process's, and what
    one program leaves behind would be counted (or freed) in the next one's."""
    result = subprocess.run([sys.executable, __file__, "--one", str(path)], capture_output=True, text=True, timeout=600,
                            env=dict(os.environ, OMP_NUM_THREADS="1"))
    lines = [line for line in result.stdout.splitlines() if line.startswith("[")]
    if result.returncode or not lines:
        raise RuntimeError(result.stderr.strip().splitlines()[-1] if result.stderr.strip() else f"exit {result.returncode}")
    return [tuple(point) for point in json.loads(lines[-1])]  # type: ignore[misc]


def accuracy() -> bool:
    programs = sorted(LAB.glob("[0-9][0-9]_*.py")) + sorted((LAB / "fixed").glob("[0-9][0-9]_*.py"))
    worst = 0.0
    failed = []
    started = time.monotonic()
    for path in programs:
        if "torch.compile" in path.read_text(encoding="utf-8"):
            continue  # its own caches and workspaces are allocator bytes no Python name holds
        try:
            points = measured(path)
        except Exception as exc:  # noqa: BLE001 - a program that cannot run here is reported, not fatal
            print(f"{path.parent.name}/{path.name}: not measured ({type(exc).__name__}: {exc})")
            continue
        for step, total, truth in points:
            error = abs(total - truth) / max(truth, 1)
            ok = error <= ACCURACY or abs(total - truth) <= SLACK
            worst = max(worst, error if abs(total - truth) > SLACK else 0.0)
            if not ok:
                failed.append(f"{path.parent.name}/{path.name} step {step}")
        shown = ", ".join(f"step {s}: {t / 1024:.1f} vs {g / 1024:.1f} KiB" for s, t, g in points[:3])
        print(f"{'fixed/' if path.parent.name == 'fixed' else ''}{path.name}: account vs allocator {shown}")
    print(f"accuracy: worst relative difference {worst:.1%} beyond {SLACK} B (target <= {ACCURACY:.0%}); "
          f"{len(failed)} census(es) off: {failed}; {time.monotonic() - started:.0f} s")
    return not failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--skip", type=int, default=20, help="first steps left out of the median (warm-up)")
    parser.add_argument("--accuracy-only", action="store_true")
    parser.add_argument("--cost-only", action="store_true")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # one program's accuracy, as JSON (a child of --accuracy)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(accuracy_of(args.one)))
        return 0
    ok = True
    if not args.cost_only:
        ok = accuracy() and ok
    if not args.accuracy_only:
        step, median, mean = own_time(args.steps, args.skip)
        print(f"in one process: a {step * 1e3:.2f} ms step (CPU time), of which the memory detectors take {median * 1e6:.0f} us "
              f"(median; {mean * 1e6:.0f} us on average with the censuses): {1 + median / step:.4f}x, "
              f"{1 + mean / step:.4f}x with the censuses")
        ok = cost(args.rounds, args.steps, args.skip) <= COST_TARGET and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
