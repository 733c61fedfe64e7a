"""The runner's side of the exchange: start the helper when the job turns out to span other
runners, tell it when the job has ended, and let it finish its last publication.

A job spans other runners when its process group has more ranks than this runner observes:
torchrun says how many ranks a node has (LOCAL_WORLD_SIZE); a rank that is the runner's own
child is its runner's only one (`srun torchdoctor run train.py`); otherwise (a script that
starts its ranks itself) the runner waits GRACE seconds for the other ranks to show up here.
A single-node job never starts the helper.

No torch here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from torchdoctor.run.launcher import Finished
from torchdoctor.run.nodes.job import ENDED, FINAL_WAIT, Launch, local_states, nodes_folder, surely_spans, write_json
from torchdoctor.run.records import ENV_DIR, ENV_PARENT

#: seconds after the first local rank's process group during which the other ranks may still
#: appear on this node (ranks a script starts itself)
GRACE = 2.0
#: seconds the helper gets for its last publication once the job has ended
LAST_PUBLICATION = 5.0


class Exchange:
    def __init__(self, folder: Path, shared_dir: Path | None = None) -> None:
        self.folder = folder
        self.shared_dir = shared_dir
        self.process: subprocess.Popen[bytes] | None = None
        #: why the job spans other runners but nothing could be exchanged (said in the report)
        self.problem: str | None = None
        self._first_seen: float | None = None

    def poll(self) -> None:
        """Called while the job runs: start the helper once the job is seen to span other runners."""
        if self.process is not None or self.problem is not None:
            return
        states = local_states(self.folder)
        if not states:
            return
        now = time.monotonic()
        self._first_seen = self._first_seen or now
        world = max(int(s["world"]) for s in states)
        ranks = {int(s["rank"]) for s in states if int(s["world"]) == world}
        if world < 2 or len(ranks) >= world:
            return
        launch = Launch.from_dict(next(s["launch"] for s in states if s.get("launch")))
        if surely_spans(launch, world) or now - self._first_seen >= GRACE:
            self._start(launch)

    def _start(self, launch: Launch) -> None:
        command = [sys.executable, "-m", "torchdoctor.run.nodes.mirror", "--folder", str(self.folder),
                   "--job", launch.key(), "--runner", str(os.getpid())]
        if self.shared_dir is not None:
            command += ["--shared-dir", str(self.shared_dir)]
        elif launch.store is not None:
            command += ["--store", launch.store]
        else:
            self.problem = ("the job's process group was made without an address this node can reach it by "
                            "(no MASTER_ADDR/MASTER_PORT, no tcp:// init_method): give --shared-dir DIR on a shared file system")
            return
        nodes_folder(self.folder).mkdir(exist_ok=True)
        environment = {k: v for k, v in os.environ.items() if k not in (ENV_DIR, ENV_PARENT)}
        with open(nodes_folder(self.folder) / "mirror.log", "ab") as log:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=environment,
                                            start_new_session=True)  # Ctrl-C at the terminal is the script's, not the helper's

    def end(self, finished: Finished) -> None:
        """The job has ended: let the helper publish this node's last records, then stop it."""
        if self.process is None:
            return
        write_json(nodes_folder(self.folder) / ENDED, {"exit_status": finished.exit_status, "stopped": finished.stopped})
        limit = LAST_PUBLICATION + (FINAL_WAIT if self.shared_dir is not None else 0.0)
        try:
            self.process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
