"""`torchdoctor dist` end to end with real processes and real torch.distributed (gloo).

Ports are chosen by the kernel (bind to port 0), so parallel test runs do not collide. The
wall-time bound is the command's functional requirement: a broken rendezvous is reported within
15 s of the tool's start. It comes from explicit deadlines (docs/dist.md, "How it stays
bounded"): the rendezvous gets 6 s from the start (8 s for ranks other than 0), and every rank
at least 3 s (5 s) after it has imported torch. Only a start-up slower than that (a rank that
needs more than 9.5 s to start Python and import torch, on a machine loaded by other tests) may
push the report past 15 s, by exactly that much: `within_bound` allows that and nothing else.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import children
from tests.load import cpu_hog
from torchdoctor import cli
from torchdoctor.dist.launch import free_port

pytestmark = pytest.mark.slow


def dist(*args: str, env: dict[str, str] | None = None, launcher: list[str] | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    command = launcher or [sys.executable, "-m", "torchdoctor"]
    base = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")}
    started = time.monotonic()
    done = children.run([*command, "dist", *args], capture_output=True, text=True, env={**base, **(env or {})}, timeout=120)
    return done, time.monotonic() - started


def within_bound(seconds: float, report: dict[str, object]) -> bool:
    """Reported within 15 s of the start; later only by as much as start-up took beyond 9.5 s."""
    ranks = report["distributed"]["ranks"]  # type: ignore[index]
    startup = max((r.get("ready_seconds") or 0.0) for r in ranks)
    return seconds < 15.0 + max(0.0, startup - 9.5)


def launched(rank: int, world: int, port: int) -> dict[str, str]:
    return {"RANK": str(rank), "WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}


def test_standalone_two_ranks_pass_with_a_bandwidth_table() -> None:
    done, _ = dist("--nproc", "2", "--format", "json", "--sizes", "1K,64K")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["findings"] == []
    assert {c["title"] for c in report["checks"]} >= {"all_reduce · gloo", "broadcast · gloo", "all_gather · gloo", "barrier · gloo"}
    facts = report["distributed"]
    assert [r["rank"] for r in facts["ranks"]] == [0, 1] and all(r["arrived"] for r in facts["ranks"])
    assert facts["rendezvous_deadline"] >= facts["rendezvous_timeout"]  # rank 0's wait, as the text line reports it
    rows = {(row["op"], row["bytes"]) for row in facts["bandwidth"]}
    assert {("all_reduce", 1024), ("all_reduce", 65536), ("barrier", 0)} <= rows
    assert all(row["seconds"] > 0 for row in facts["bandwidth"])


def test_four_ranks_agree_and_are_correct() -> None:
    done, _ = dist("--nproc", "4", "--sizes", "4K", "--no-color")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all_reduce · gloo: correct on 4 ranks" in done.stdout
    assert "4/4 ranks joined" in done.stdout


def test_a_busy_machine_gets_the_same_verdict() -> None:
    """Ranks that take longer to import torch than the rendezvous window (every core busy) still
    meet: each waits until its import is done and a few seconds more, nothing is reported."""
    with cpu_hog(2 * (os.cpu_count() or 2)):
        done, _ = dist("--nproc", "4", "--sizes", "1K", "--format", "json")
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["findings"] == [], report["findings"]
    assert all(r["arrived"] for r in report["distributed"]["ranks"])


def test_under_torchrun_only_rank_0_prints() -> None:
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "-m", "torchdoctor"]
    done, _ = dist("--sizes", "1K", "--no-color", launcher=torchrun)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("torchdoctor dist: 2 ranks, rank 0 of a launched job") == 1
    assert "through the launcher's store" in done.stdout
    assert done.stdout.count("torchdoctor dist: 0 errors") == 1


def test_a_missing_rank_is_named_within_15_seconds() -> None:
    done, seconds = dist("--format", "json", env=launched(0, 2, free_port()))
    assert done.returncode == 1
    report = json.loads(done.stdout)
    (finding,) = report["findings"]
    assert finding["rule"] == "TD704" and finding["message"].startswith("rank 1 never reached the rendezvous store")
    assert within_bound(seconds, report), (seconds, report["distributed"]["ranks"])


def test_a_shorter_rendezvous_timeout_is_obeyed() -> None:
    done, _ = dist("--timeout", "3", "--format", "json", env=launched(0, 2, free_port()))
    report = json.loads(done.stdout)
    assert [f["rule"] for f in report["findings"]] == ["TD704"] and report["distributed"]["rendezvous_timeout"] == 3


def test_a_port_nobody_listens_on_is_reported_within_15_seconds_with_the_default_timeout(tmp_path: Path) -> None:
    done, seconds = dist("--no-color", "--output", str(tmp_path / "report.json"), env=launched(1, 2, free_port()))
    assert done.returncode == 1
    assert "TD703 [error] rank 1 on" in done.stdout and "the connection was refused: nothing listens there" in done.stdout
    (written,) = tmp_path.iterdir()  # rank 1 writes beside rank 0's file, never over it
    report = json.loads(written.read_text())
    assert written.name == "report.rank1.json" and report["findings"][0]["rank"] == 1
    assert within_bound(seconds, report), (seconds, report["distributed"]["ranks"])


def test_a_port_in_use_on_the_master() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        done, _ = dist("--format", "json", env=launched(0, 1, holder.getsockname()[1]))
    assert done.returncode == 1
    (finding,) = json.loads(done.stdout)["findings"]
    assert finding["rule"] == "TD702" and "EADDRINUSE" in finding["message"] and finding["rank"] == 0


def test_a_hung_rank_is_reported_by_the_watchdog() -> None:
    done, seconds = dist("--nproc", "3", "--simulate-hang", "1", "--timeout", "4", "--sizes", "1K", "--format", "json")
    assert done.returncode == 1
    findings = json.loads(done.stdout)["findings"]
    assert [f["rule"] for f in findings] == ["TD707"], findings
    assert findings[0]["message"].startswith("all_reduce 1 KiB (gloo) did not complete within 4 s: ranks 0, 2 waited in it; rank 1 never entered")
    assert seconds < 30


def test_bad_launch_variables_fail_before_any_rank_starts(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in {"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("MASTER_PORT", raising=False)
    assert cli.main(["dist", "--format", "json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert finding["message"] == "the launch variables cannot work: MASTER_PORT is not set; RANK=2 is outside 0..1 (WORLD_SIZE=2)"


def test_bad_options_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert cli.main(["dist", "--sizes", "big"]) == 2
    assert cli.main(["dist", "--nproc", "0"]) == 2
    assert cli.main(["dist", "--timeout", "-1"]) == 2
    assert capsys.readouterr().err.count("torchdoctor: error:") == 3
