"""The runner's comparison of ranks (run/ranks.py), on state files and records written by the
real writers (instruments/distributed.py), without starting a job. The end-to-end behaviour with
real gloo ranks is in test_distributed.py."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from torchdoctor.core.finding import Category, Finding, Severity
from torchdoctor.observe.instruments import distributed
from torchdoctor.observe.instruments.distributed import DistributedIndex
from torchdoctor.run import ranks
from torchdoctor.run.nodes.job import Launch
from torchdoctor.run.records import merge

DEAD = 2**22 + 4321  # above Linux's pid_max: no such process
SCRIPT = "/job/train.py"


def rank_state(folder: Path, rank: int, calls: list[tuple[Any, ...]], *, waiting: bool = False, running: bool = False,
               completed: bool | None = True, pid: int | None = None, world: int = 2, launch: Launch | None = None) -> None:
    """Write one rank's state file with the real writer. `calls`: (op, line) or (op, line, shape, group)."""
    index = DistributedIndex()
    index.attach(folder)
    index.rank, index.world, index.timeout, index.launch = rank, world, 1800.0, launch
    for call in calls:
        op, line = call[0], call[1]
        shape = call[2] if len(call) > 2 else ((4,) if op == "all_reduce" else None)
        group = call[3] if len(call) > 3 else None
        index.record(op, shape, "float32" if shape else None, group, None, (SCRIPT, line))
    if waiting:
        index._waiting = (len(index.calls) - 1, 0.0)
    elif not running:
        index.finished, index.completed = True, completed
    original = os.getpid
    try:
        os.getpid = lambda: DEAD + rank if pid is None else pid  # type: ignore[assignment] - a file per simulated process
        index.write()
    finally:
        os.getpid = original  # type: ignore[assignment]


def test_a_collective_under_a_rank_condition_is_found_at_its_line(tmp_path: Path) -> None:
    rank_state(tmp_path, 0, [("all_reduce", 5)], waiting=True)
    rank_state(tmp_path, 1, [("barrier", 6)], waiting=True)
    (divergence,) = ranks.divergences(ranks.read_states(tmp_path))
    assert divergence.index == 0 and divergence.location() == (SCRIPT, 5)
    assert divergence.difference() == (
        "their 1st collective differs: rank 0 calls `all_reduce` (float32[4]) at /job/train.py:5, rank 1 calls `barrier` at /job/train.py:6"
    )


def test_calls_paired_across_different_lines_name_the_line_only_one_rank_runs(tmp_path: Path) -> None:
    rank_state(tmp_path, 0, [("all_reduce", 13), ("all_reduce", 17)], waiting=True)
    rank_state(tmp_path, 1, [("all_reduce", 17)])  # ended normally after one call
    (divergence,) = ranks.divergences(ranks.read_states(tmp_path))
    assert divergence.index == 1 and divergence.location() == (SCRIPT, 13)
    text = divergence.difference()
    assert text.startswith("their 1st collectives came from different lines and were paired with each other")
    assert text.endswith("rank 1 never calls one (the script ends there)")


def test_same_collectives_from_different_lines_are_correct(tmp_path: Path) -> None:
    """`if rank == 0: broadcast(t, 0) else: broadcast(t, 0)`: matched by order, not by line."""
    rank_state(tmp_path, 0, [("broadcast", 8), ("barrier", 12)])
    rank_state(tmp_path, 1, [("broadcast", 10), ("barrier", 12)])
    assert ranks.divergences(ranks.read_states(tmp_path)) == []


def test_a_rank_that_crashed_early_is_no_ordering_problem(tmp_path: Path) -> None:
    rank_state(tmp_path, 0, [("all_reduce", 5), ("barrier", 9)])
    rank_state(tmp_path, 1, [("all_reduce", 5)], completed=False)
    assert ranks.divergences(ranks.read_states(tmp_path)) == []


def test_a_subgroup_is_compared_among_its_members_only(tmp_path: Path) -> None:
    pair = (0, 1)
    rank_state(tmp_path, 0, [("all_reduce", 5, (4,), pair), ("barrier", 9)], world=3)
    rank_state(tmp_path, 1, [("all_reduce", 5, (4,), pair), ("barrier", 9)], world=3)
    rank_state(tmp_path, 2, [("barrier", 9)], world=3)
    assert ranks.divergences(ranks.read_states(tmp_path)) == []
    rank_state(tmp_path, 1, [("all_reduce", 5, (8,), pair), ("barrier", 9)], world=3)
    (divergence,) = ranks.divergences(ranks.read_states(tmp_path))
    assert divergence.group == pair and "in group [0, 1] differs" in divergence.difference()


def test_long_sequences_keep_their_positions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(distributed, "WINDOW", 4)
    rank_state(tmp_path, 0, [("all_reduce", 5)] * 10 + [("barrier", 7)], waiting=True)
    rank_state(tmp_path, 1, [("all_reduce", 5)] * 11, waiting=True)
    (divergence,) = ranks.divergences(ranks.read_states(tmp_path))
    assert divergence.index == 10 and "their 11th collective differs" in divergence.difference()


def test_the_hang_watch_waits_while_a_rank_runs_or_after_one_crashed(tmp_path: Path) -> None:
    rank_state(tmp_path, 0, [("all_reduce", 5)], waiting=True, pid=os.getpid())
    rank_state(tmp_path, 1, [("barrier", 6)], running=True, pid=os.getppid())  # may still call all_reduce
    watch = ranks.HangWatch(tmp_path, stop_after=0)
    assert watch.check() is None and watch.check() is None
    (tmp_path / f"c{os.getppid()}.json").unlink()
    rank_state(tmp_path, 1, [], completed=False)  # crashed before any collective: its crash is the story
    assert watch.check() is None and watch.check() is None


def test_a_deadlock_is_confirmed_then_stopped(tmp_path: Path) -> None:
    alive = os.getpid()
    rank_state(tmp_path, 0, [("all_reduce", 5)], waiting=True, pid=alive)
    rank_state(tmp_path, 1, [("barrier", 6)], waiting=True, pid=os.getppid())
    watch = ranks.HangWatch(tmp_path, stop_after=0)
    assert watch.check() is None  # first sight
    stop = watch.check()
    assert stop is not None and "torchdoctor stopped the job" in stop.reason and "30 min" in stop.reason


def failed(rank: int, op: str) -> Finding:
    return Finding("TD462", "collective-timed-out", Category.DISTRIBUTED, Severity.ERROR, f"`{op}` failed", "h", SCRIPT, 5, rank=rank,
                   evidence={"op": op, "seconds": 3.0, "peer_gone": False})


def test_failed_collectives_fold_into_the_order_finding(tmp_path: Path) -> None:
    rank_state(tmp_path, 0, [("all_reduce", 5)], waiting=True)
    rank_state(tmp_path, 1, [("barrier", 6)], waiting=True)
    (finding,) = ranks.collective_findings(tmp_path, [failed(0, "all_reduce"), failed(1, "barrier")], stopped=None)
    assert finding.rule == "TD461" and (finding.file, finding.line) == (SCRIPT, 5)
    assert finding.message.endswith(
        "; then `all_reduce` on rank 0 and `barrier` on rank 1 failed after waiting 3 s for the other ranks (the process group's timeout)"
    )


def test_a_failed_collective_says_where_the_others_were(tmp_path: Path) -> None:
    rank_state(tmp_path, 0, [("barrier", 6)], completed=False)
    rank_state(tmp_path, 1, [], completed=False)
    (finding,) = ranks.collective_findings(tmp_path, [failed(0, "barrier")], stopped=None)
    assert finding.rule == "TD462" and finding.message.endswith("; rank 1 never joined it (it had called no collective)")


@pytest.mark.parametrize(
    "other, gone, says",
    [
        ({"calls": [("barrier", 7)], "waiting": True}, False,
         "`barrier` failed after waiting 3 s for the other ranks (the process group's timeout); rank 1 was waiting in `barrier` at /job/train.py:7"),
        ({"calls": [("barrier", 6)]}, True,
         "`barrier` failed because another rank closed its connection (it exited or crashed) while this one waited in it; "
         "rank 1 finished without joining it (its last collective was `barrier` at /job/train.py:6)"),
    ],
    ids=["timed-out-other-waiting", "peer-gone-other-finished"],
)
def test_how_it_failed_and_where_the_other_was_are_told(tmp_path: Path, other: dict[str, Any], gone: bool, says: str) -> None:
    rank_state(tmp_path, 0, [("barrier", 6)], completed=False)
    rank_state(tmp_path, 1, **other)
    mine = failed(0, "barrier")
    if gone:
        mine = replace(mine, evidence={"op": "barrier", "peer_gone": True})
    (finding,) = ranks.collective_findings(tmp_path, [mine], stopped=None)
    assert finding.rule == "TD462" and finding.message == says


def replicas(rank: int, **info: Any) -> dict[str, Any]:
    return {"type": "replicas", "rank": rank, "optimizer": 0, "names": ["fc.weight", "fc.bias"], "shapes": [[4, 8], [4]],
            "ddp_at": [SCRIPT, 9], "bypass_at": None, "synced_at": None, "optimizer_at": [SCRIPT, 10], **info}


def checksums(rank: int, step: int, pre: list[int], grad: list[int], post: list[int], lr: float = 0.1) -> dict[str, Any]:
    return {"type": "checksums", "rank": rank, "optimizer": 0, "step": step, "pre": pre, "grad": grad, "post": post, "lr": [lr]}


def test_equal_replicas_give_nothing_and_other_models_are_not_compared() -> None:
    same = [checksums(r, s, [1, 2], [3, 4], [5, 6]) for r in (0, 1) for s in (1, 2)]
    assert ranks.replica_findings([replicas(0), replicas(1), *same]) == []
    different = [checksums(0, 1, [1, 2], [3, 4], [5, 6]), checksums(1, 1, [9, 9], [9, 9], [9, 9])]
    assert ranks.replica_findings([replicas(0), replicas(1, names=["head.weight", "head.bias"]), *different]) == []


def test_gradients_not_averaged_through_a_bypassed_ddp() -> None:
    records = [replicas(0, bypass_at=[SCRIPT, 20]), replicas(1, bypass_at=[SCRIPT, 20]),
               checksums(0, 1, [1, 2], [3, 4], [5, 6]), checksums(1, 1, [1, 2], [3, 7], [5, 8])]
    (finding,) = ranks.replica_findings(records)
    assert (finding.file, finding.line) == (SCRIPT, 20)
    assert finding.message.startswith("parameter `fc.bias` differs across ranks from optimizer step 1 on (its gradient, rank 1 vs rank 0)")
    assert "calls the model inside DistributedDataParallel directly (`model.module(...)`)" in finding.message


def test_different_starting_weights_without_ddp_point_at_the_optimizer() -> None:
    manual = {"ddp_at": None, "synced_at": [SCRIPT, 30]}
    records = [replicas(0, **manual), replicas(1, **manual), checksums(0, 1, [1, 2], [3, 4], [5, 6]), checksums(1, 1, [7, 2], [3, 4], [8, 6])]
    (finding,) = ranks.replica_findings(records)
    assert (finding.file, finding.line) == (SCRIPT, 10)
    assert "before the first optimizer step" in finding.message and "averaging the gradients by hand at /job/train.py:30" in finding.message


def test_a_learning_rate_that_depends_on_the_rank() -> None:
    records = [replicas(0), replicas(1), checksums(0, 1, [1, 2], [3, 4], [5, 6]), checksums(0, 2, [5, 6], [3, 4], [7, 8]),
               checksums(1, 1, [1, 2], [3, 4], [5, 6]), checksums(1, 2, [5, 6], [3, 4], [9, 9], lr=0.2)]
    (finding,) = ranks.replica_findings(records)
    assert "after optimizer step 2" in finding.message and "rank 0: [0.1]; rank 1: [0.2]" in finding.message


def test_the_same_finding_on_several_ranks_merges_even_when_numbers_differ() -> None:
    def crash(rank: int) -> Finding:
        return Finding("TD001", "script-crashed", Category.API, Severity.ERROR, f"grad for rank {rank}: 4 5", "h", SCRIPT, 3, rank=rank)

    (merged,) = merge([crash(1), crash(0)])
    assert merged.message == "grad for rank 0: 4 5" and merged.rank is None
    assert merged.evidence == {"ranks": [0, 1], "messages": {"0": "grad for rank 0: 4 5", "1": "grad for rank 1: 4 5"}}


def test_a_rank_started_by_fork_ended_normally_unless_it_crashed(tmp_path: Path) -> None:
    rank_state(tmp_path, 0, [("all_reduce", 10), ("all_reduce", 11)], waiting=True)
    rank_state(tmp_path, 1, [("all_reduce", 11)], completed=None)  # how a forked rank ended is not known
    (finding,) = ranks.collective_findings(tmp_path, [], stopped=None)
    assert finding.rule == "TD461" and finding.line == 10
    crash = Finding("TD001", "script-crashed", Category.API, Severity.ERROR, "m", "h", SCRIPT, 30, rank=1, evidence={"exception": "E"})
    assert [f.rule for f in ranks.collective_findings(tmp_path, [crash], stopped=None)] == ["TD001"]


def test_each_way_parameters_diverge_fills_its_variant() -> None:
    """Every branch of the comparison picks a TD460 variant its facts fill (a mismatch raises)."""
    from torchdoctor.run.ranks import _diverged

    def said(phase: str, previous: int | None, **info: object) -> str:
        by_rank = {0: {phase: [1], "lr": 0.1}, 1: {phase: [2], "lr": 0.2 if info.pop("lrs", False) else 0.1}}
        return _diverged({"names": ["fc.bias"], **info}, [0, 1], 3, previous, phase, [0], by_rank).message

    place = ("/job/train.py", 30)
    assert "DistributedDataParallel made them equal when it was built at /job/train.py:30" in said("pre", None, ddp_at=place)
    assert said("pre", None).endswith("(rank 1 vs rank 0): the ranks start from different weights")
    assert "averaging the gradients by hand at /job/train.py:30" in said("pre", None, synced_at=place)
    assert "between optimizer steps 2 and 3 (rank 1 vs rank 0): they were equal after step 2" in said("pre", 2)
    assert "the training forward at /job/train.py:30 calls" in said("grad", 2, bypass_at=place)
    assert "DistributedDataParallel did not average" in said("grad", 2, ddp_at=place)
    assert said("grad", 2).endswith("its gradient is not averaged across ranks like the others")
    assert said("post", 2, lrs=True).endswith("the learning rates differ: rank 0: 0.1; rank 1: 0.2")
    assert "the update differs across ranks" in said("post", 2)
