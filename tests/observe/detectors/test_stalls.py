"""TD497 training-stalled, both sides: a loop that stops moving is reported once, at the line it
waits on, with what it waits for; steady training, a machine made busy by CPU hogs, and a
watchdog turned off report nothing. (A DataLoader worker that sleeps: the lab's program 56.)"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from torch import nn

import torchdoctor
from torchdoctor.observe.detectors import stalls


@pytest.fixture(autouse=True)
def one_second(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(stalls.ENV_TIMEOUT, "1")


def run(train: Callable[[], object]) -> list[torchdoctor.Finding]:
    torch.manual_seed(0)
    with torchdoctor.watch() as watched:
        train()
    return [f for f in watched.findings if f.rule == "TD497"]


def loop(steps: int, pause: Callable[[int], None] = lambda step: None, seconds: float = 0.0) -> Callable[[], None]:
    """`steps` small steps (or as many as `seconds` take), calling `pause(step)` in each."""

    def train() -> None:
        model = nn.Linear(16, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = torch.randn(64, 16), torch.randn(64, 1)
        started, step = time.monotonic(), 0
        while step < steps or time.monotonic() - started < seconds:
            step += 1
            pause(step)
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()

    return train


def line_of(finding: torchdoctor.Finding) -> str:
    return Path(finding.file or "").read_text().splitlines()[(finding.line or 1) - 1]


def test_a_call_that_does_not_return_is_reported_once_at_its_line() -> None:
    def pause(step: int) -> None:
        if step in (20, 40):
            time.sleep(3.0)  # the stall

    found = run(loop(60, pause))
    assert len(found) == 1
    assert "time.sleep(3.0)" in line_of(found[0]) and "a call there has not returned" in found[0].message
    evidence = found[0].evidence
    assert evidence["steps"] == 19 and evidence["waited_s"] >= 1.0
    assert any("MainThread" in name for name in evidence["threads"])


def test_a_wait_on_a_queue_is_named() -> None:
    jobs: queue.Queue[int] = queue.Queue()

    def pause(step: int) -> None:
        if step == 20:
            threading.Timer(3.0, jobs.put, (1,)).start()
            jobs.get()  # nothing comes for 3 s

    found = run(loop(30, pause))
    assert len(found) == 1 and "jobs.get()" in line_of(found[0])
    assert "on a lock or a queue (`threading.wait`)" in found[0].message


def test_steady_training_has_no_stall() -> None:
    assert run(loop(0, seconds=3.0)) == []


@pytest.fixture
def hogs() -> Iterator[None]:
    """Busy processes, more than the machine has cores for."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(4)]
    try:
        time.sleep(0.5)
        yield
    finally:
        for process in busy:
            process.kill()
            process.wait()


def test_a_busy_machine_makes_no_stall(hogs: None) -> None:
    """The steps slow down under the hogs, and the watchdog's own checks come late: no stall."""
    assert run(loop(0, seconds=4.0)) == []


def test_zero_turns_the_watchdog_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(stalls.ENV_TIMEOUT, "0")

    def pause(step: int) -> None:
        if step == 20:
            time.sleep(2.5)

    assert run(loop(30, pause)) == []
    assert not any(t.name == "torchdoctor-stall-watchdog" for t in threading.enumerate())
