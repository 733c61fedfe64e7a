"""The run report's notices (run/summary.py)."""

from __future__ import annotations

import json
import signal

from torchdoctor.run.boot import START_FAILED
from torchdoctor.run.launcher import Finished
from torchdoctor.run.records import RunRecords
from torchdoctor.run.summary import STOPPED, _killed_finding, _notices


def test_a_job_torchdoctor_stopped_says_so_in_words() -> None:
    finished = Finished(returncode=-signal.SIGTERM, seconds=1.0, stopped="every rank waited there")
    notes = _notices(finished, RunRecords(processes=[{"torch": True, "outcome": "crashed"}]))
    assert notes[0] == STOPPED and STOPPED.startswith("torchdoctor stopped the job")
    json.dumps(notes)  # the notices go into the JSON report


def test_a_script_stopped_by_a_signal_names_it() -> None:
    finished = Finished(returncode=-signal.SIGTERM, seconds=1.0)
    notes = _notices(finished, RunRecords(processes=[{"torch": True}]))
    assert notes[0] == "the script was stopped by SIGTERM; the report covers what ran until then"


def test_a_process_that_imported_torch_but_could_not_observe_is_not_said_to_have_never_imported_it() -> None:
    finished = Finished(returncode=0, seconds=1.0)
    failed = {"pid": 7, "torch": False, "outcome": "exited", "notes": [f"{START_FAILED}: PluginError: td_x: broken"]}
    notes = _notices(finished, RunRecords(processes=[failed]))
    assert notes == [f"pid 7: {START_FAILED}: PluginError: td_x: broken"]
    quiet = _notices(finished, RunRecords(processes=[{"pid": 7, "torch": False, "outcome": "exited", "notes": []}]))
    assert quiet == ["the script never imported torch: there was nothing to observe"]


def test_each_signal_says_its_cause_and_fix() -> None:
    said = {number: _killed_finding(Finished(-number, 1.0)) for number in (signal.SIGKILL, signal.SIGBUS, signal.SIGSEGV, signal.SIGFPE)}
    assert said[signal.SIGKILL].message == "the script's process was killed by SIGKILL (usually the kernel's out-of-memory killer)"  # type: ignore[union-attr]
    assert "/dev/shm" in said[signal.SIGBUS].message and "--shm-size" in said[signal.SIGBUS].hint  # type: ignore[union-attr]
    assert said[signal.SIGSEGV].message.endswith("(a crash in native code)") and "compiled extensions" in said[signal.SIGSEGV].hint  # type: ignore[union-attr]
    assert said[signal.SIGFPE].message == "the script's process was killed by SIGFPE (a crash in native code)"  # type: ignore[union-attr]
    assert _killed_finding(Finished(-signal.SIGTERM, 1.0)) is None
