"""Global rank 0, at its exit: let the other nodes' last records arrive before the store goes.

The job's store lives on rank 0's node: in torchrun's agent there, which ends soon after rank 0
does, or in rank 0's own process (`init_method="env://"` without torchrun). The other nodes'
helpers publish their ranks' last records (written at those ranks' exit) through it, so rank 0
waits at its exit, at most `TORCHDOCTOR_NODES_WAIT` seconds, until its node's helper says every
rank of the job has either been seen on this node or left its last records on another
(`complete` in nodes/status.json). Nothing is sent or received here: it reads one local file.
Rank 0's training is over by then; only its exit comes later, and only in a multi-node job.

No torch here.
"""

from __future__ import annotations

import time
from pathlib import Path

from torchdoctor.run.launcher import alive
from torchdoctor.run.nodes.job import FINAL_WAIT, STATUS, Launch, nodes_folder, read_json, surely_spans

#: seconds between two looks at the helper's status
LOOK = 0.1


def await_peers(folder: Path, launch: Launch, world: int) -> None:
    """Wait (bounded) until the helper has every rank's last records, or cannot get them."""
    expected = surely_spans(launch, world)  # a helper will come even if it has not started yet
    deadline = time.monotonic() + FINAL_WAIT
    path = nodes_folder(folder) / STATUS
    while time.monotonic() < deadline:
        status = read_json(path)
        if status is None:
            if not expected:
                return
        elif not waiting_is_useful(status):
            return
        time.sleep(LOOK)


def waiting_is_useful(status: dict[str, object]) -> bool:
    """The helper runs, reaches (or is still trying to reach) the store, and lacks some ranks."""
    pid = status.get("pid")
    if status.get("mode") != "store" or status.get("complete") or not isinstance(pid, int) or not alive(pid):
        return False
    return bool(status.get("connected")) or status.get("error") is None
