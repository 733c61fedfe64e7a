"""The memory account: censuses by owner and phase, per-step series, the CUDA allocator's numbers.

No GPU here: the CUDA path reads allocator facts injected through `use_allocator` (the same
numbers `torch._C._cuda_memoryStats` gives), over real training steps on CPU.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
import torch
from torch import nn

from tests.observe.detectors.conftest import observing
from torchdoctor.observe.detectors.memory_account import MemoryAccount
from torchdoctor.observe.detectors.memory_leaks import MemoryLeaks
from torchdoctor.observe.memory import process
from torchdoctor.observe.memory.process import AllocatorFacts
from torchdoctor.observe.memory.state import FULL_STEPS, MemoryState
from torchdoctor.observe.memory.table import render
from torchdoctor.observe.session import Session

MIB = 2**20


def train(steps: int = 10, batch: int = 256) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(steps):
        x, y = torch.randn(batch, 64), torch.randint(0, 4, (batch,))
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()


def account(run=train) -> MemoryState:  # type: ignore[no-untyped-def]
    with observing(MemoryAccount, MemoryLeaks):
        state = Session.current().installed(MemoryState)  # type: ignore[union-attr]
        run()
    assert state is not None
    return state


def test_the_first_steps_are_counted_by_owner_and_phase() -> None:
    state = account()
    first = state.timeline.first
    assert [(c.step, c.phase) for c in first[:3]] == [(1, "forward"), (1, "backward"), (1, "step")]
    assert len(first) == 3 * FULL_STEPS
    forward, after_step = first[3], first[5]  # step 2: gradients and Adam's state exist
    params = (64 * 512 + 512 + 512 * 4 + 4) * 4
    assert forward.owners["parameters"] == params
    assert after_step.owners["gradients"] == params and after_step.owners["optimizer"] == 2 * params + 4 * 4  # exp_avg(_sq), step
    assert forward.owners["activations"] >= 256 * 512 * 4  # the ReLU's output, saved for backward
    assert max(forward.activations, key=forward.activations.get) == "ReLU `1`"
    assert "activations" not in after_step.owners  # backward() freed them
    assert state.timeline.peaks["forward"]["bytes"] == max(c.total for c in first if c.phase == "forward")


def test_later_censuses_follow_the_doublings_of_the_run() -> None:
    state = account(lambda: train(steps=40))
    assert [c.step for c in state.timeline.recent] == [8, 16, 32]  # after the full steps 1-3
    summary = state.summary()
    assert summary["steps"] == list(range(1, 41)) and len(summary["series"]["rss"]) == 40
    assert summary["censuses"][-1]["step"] == 32 and summary["owners"]["parameters"] > 0


def test_a_view_shares_its_base_storage() -> None:
    from torchdoctor.observe.memory.census import Sources, take

    base = torch.zeros(1024, 256)
    views = [base[:1], base.view(-1), base.t()]  # noqa: F841 - found through this frame
    import sys

    census = take(1, "step", Sources(frame=sys._getframe(), all_user_modules=False))  # not the whole suite's modules
    size = 1024 * 256 * 4
    # one storage, counted once (beside it, whatever small tensors the test runner's own modules hold)
    assert size <= census.owners["other"] < size + size // 8


class FakeAllocator:
    """A caching allocator's numbers as the steps go: warming up (reserved grows), then steady."""

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> list[AllocatorFacts]:
        self.reads += 1
        reserved = min(self.reads, 6) * 512 * MIB
        return [AllocatorFacts("cuda:0", allocated=400 * MIB, reserved=reserved, peak=min(self.reads, 6) * 450 * MIB,
                               inactive_split=64 * MIB)]


@pytest.fixture
def fake_cuda() -> Iterator[FakeAllocator]:
    fake = FakeAllocator()
    process.use_allocator(fake)
    yield fake
    process.use_allocator(None)


def test_the_cuda_allocator_is_read_every_step(fake_cuda: FakeAllocator) -> None:
    state = account(lambda: train(steps=12))
    series = state.summary()["series"]
    assert len(series["allocated"]) == 12 and series["reserved"][-1] == 3 * 1024 * MIB
    assert state.summary()["allocators"][0]["inactive_split"] == 64 * MIB
    peaks = state.timeline.peaks
    assert {"forward (allocator)", "backward (allocator)", "step (allocator)"} & peaks.keys()


def test_an_allocator_warming_up_is_not_a_leak(fake_cuda: FakeAllocator) -> None:
    with observing(MemoryAccount, MemoryLeaks) as observed:
        train(steps=40)
    assert observed.findings == []


def test_the_table_shows_owners_phases_and_the_allocator(fake_cuda: FakeAllocator) -> None:
    state = account(lambda: train(steps=12))
    lines = render({**state.summary(), "pid": 1, "rank": None})
    text = "\n".join(lines)
    assert lines[0].startswith("memory (pid 1, cuda:0): live tensor storages by owner")
    for owner in ("parameters and buffers", "gradients", "optimizer state", "activations (saved for backward)", "total"):
        assert owner in text
    assert "activations by module" in text and "ReLU `1`" in text
    assert "cuda:0 caching allocator: 400.0 MiB allocated" in text and "64.0 MiB cached in split blocks" in text


def test_frames_read_by_a_census_do_not_keep_their_variables_alive() -> None:
    """On Python <= 3.12 `frame.f_locals` keeps a snapshot of the loop's variables in the frame:
    the batch a step dropped would stay alive until the next read (here: for good)."""
    from torch.multiprocessing.reductions import StorageWeakRef

    from torchdoctor.observe.detectors.memory import LossHistory

    with observing(MemoryAccount, LossHistory):
        torch.manual_seed(0)
        model = nn.Linear(8, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        refs, total = [], 0.0
        for _ in range(66):  # TD147 looks at `total` at steps 64 and 65, where no census runs
            batch = torch.randn(1024, 8)
            refs.append(StorageWeakRef(batch.untyped_storage()))
            optimizer.zero_grad()
            loss = model(batch).sum()
            loss.backward()
            optimizer.step()  # a census (and TD147's look at `total`) reads this frame's variables here
            total += loss.item()
        del batch
        assert all(ref.expired() for ref in refs)  # no snapshot of this frame keeps an old batch


def test_allocator_facts_can_be_injected_into_a_child_process(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """`torchdoctor run` children read TORCHDOCTOR_CUDA_FACTS (the CUDA path's end-to-end tests)."""
    import json

    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"sequence": [[{"device": "cuda:0", "allocated": 1, "reserved": 2, "peak": 3}],
                                              [{"device": "cuda:0", "allocated": 4, "reserved": 5, "peak": 6}]]}))
    monkeypatch.setenv(process.ENV_CUDA_FACTS, str(facts))
    monkeypatch.setattr(process._from_file, "calls", 0, raising=False)
    assert [f.allocated for f in process.allocators()] == [1]
    assert [f.allocated for f in process.allocators()] == [4]
    assert [f.allocated for f in process.allocators()] == [4]  # the last read repeats


def test_under_watch_a_census_walks_only_the_running_modules_globals() -> None:
    """A process that hosts much else (a test runner, a notebook server): the census reads the
    globals of the modules whose code runs, not those of every user module loaded."""
    import types

    from torchdoctor.observe.memory.census import Sources, _roots

    other = types.ModuleType("unrelated_user_module")
    other.__file__ = __file__.replace("test_memory_account", "unrelated_user_module")
    other.kept = torch.zeros(4)
    sys.modules["unrelated_user_module"] = other
    try:
        frame = sys._getframe()
        names = {path[-1].text for path, _ in _roots(Sources(frame=frame, all_user_modules=False))}
        assert "kept" not in names and "test_under_watch_a_census_walks_only_the_running_modules_globals" in names
        names = {path[-1].text for path, _ in _roots(Sources(frame=frame, all_user_modules=True))}
        assert "kept" in names
    finally:
        del sys.modules["unrelated_user_module"]


def test_a_modules_import_machinery_is_not_walked(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A module's `__loader__` is no user data: pytest's assertion rewriter holds its whole
    session there (every test item), which a census under `watch()` in pytest-xdist walked."""
    import sys
    import types

    from torchdoctor.observe.memory.census import Sources, take

    class Loader:
        def __init__(self) -> None:
            self.held = torch.zeros(1024, 1024)  # 4 MB the census must not reach

    module = types.ModuleType("a_user_module")
    module.__file__ = str(tmp_path / "a_user_module.py")
    module.__loader__ = Loader()  # type: ignore[assignment]
    exec(compile("def census(take, Sources, sys):\n    kept = torch.zeros(16)\n"
                 "    return take(1, 'step', Sources(frame=sys._getframe(), all_user_modules=False))\n",
                 module.__file__, "exec"), module.__dict__)
    module.__dict__["torch"] = torch
    found = module.census(take, Sources, sys)
    assert found.owners["other"] < 1024 * 1024 * 4
