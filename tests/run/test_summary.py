"""The run report's notices (run/summary.py)."""

from __future__ import annotations

import json
import signal

from torchdoctor.run.launcher import Finished
from torchdoctor.run.records import RunRecords
from torchdoctor.run.summary import STOPPED, _notices


def test_a_job_torchdoctor_stopped_says_so_in_words() -> None:
    finished = Finished(returncode=-signal.SIGTERM, seconds=1.0, stopped="every rank waited there")
    notes = _notices(finished, RunRecords(processes=[{"torch": True, "outcome": "crashed"}]))
    assert notes[0] == STOPPED and STOPPED.startswith("torchdoctor stopped the job")
    json.dumps(notes)  # the notices go into the JSON report


def test_a_script_stopped_by_a_signal_names_it() -> None:
    finished = Finished(returncode=-signal.SIGTERM, seconds=1.0)
    notes = _notices(finished, RunRecords(processes=[{"torch": True}]))
    assert notes[0] == "the script was stopped by SIGTERM; the report covers what ran until then"
