"""Per-process record files and how the runner merges them."""

from __future__ import annotations

from pathlib import Path

from torchdoctor.core.finding import Category, Finding, Severity
from torchdoctor.run.nodes.view import read_folder
from torchdoctor.run.records import ProcessLog, finding_from_dict, finding_record, merge


def finding(rank: int | None = None, line: int = 3, count: int = 1) -> Finding:
    return Finding("TD101", "softmax-before-cross-entropy", Category.LOSS, Severity.ERROR, "m", "h", "t.py", line, column=4, count=count, rank=rank)


def test_round_trip_keeps_every_field() -> None:
    original = finding(rank=2, count=5)
    assert finding_from_dict(original.to_dict()) == original


def test_same_finding_on_every_rank_is_one_with_the_ranks() -> None:
    merged = merge([finding(0), finding(1, count=3), finding(1, line=9)])
    assert len(merged) == 2
    shared = next(f for f in merged if f.line == 3)
    assert shared.rank is None and shared.evidence == {"ranks": [0, 1]} and shared.count == 3
    assert next(f for f in merged if f.line == 9).rank == 1


def test_read_folder_takes_the_latest_record_and_skips_torn_lines(tmp_path: Path) -> None:
    log = ProcessLog(tmp_path)
    log.write(finding_record(finding(count=1), key="k", pid=1))
    log.write(finding_record(finding(count=4), key="k", pid=1))
    log.write({"type": "process", "pid": 1, "role": "main", "stats": {"steps": 7}})
    log.close()
    with open(log.path, "a", encoding="utf-8") as handle:
        handle.write('{"type": "finding", "key": "cut sh')  # a process killed mid-write
    records = read_folder(tmp_path)
    assert [f.count for f in records.findings] == [4]
    assert records.total("steps") == 7 and records.total("steps", role="rank") == 0
