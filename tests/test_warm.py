"""tests/warm.py: a script forked from the warm Python ends as the same script started by
`torchdoctor run` in a process of its own: same exit status, same findings, and the same view of
itself (`__main__`, argv, sys.path[0], folder, environment, exit handlers after its threads)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests import children, warm

#: each script writes what it sees of itself to facts.json (in the exit handler: after everything else)
FACTS = """\
import atexit, json, os, sys, threading, time
import torch
seen = {"name": __name__, "argv": sys.argv[1:], "path0": sys.path[0] == os.path.dirname(os.path.abspath(__file__)),
        "cwd": os.getcwd() == os.path.dirname(os.path.abspath(__file__)), "file": os.path.basename(__file__),
        "spec": __spec__ is None, "env": os.environ.get("WARM_TEST"), "threads": torch.get_num_threads()}
def late():
    time.sleep(0.3)
    seen["thread joined"] = True
threading.Thread(target=late).start()
atexit.register(lambda: open("facts.json", "w").write(json.dumps(seen)))
"""
ENDINGS = {
    "completes": "",
    "exits with 3": "sys.exit(3)\n",
    "exits with a message": "sys.exit('bye')\n",
    "backward twice": (
        "x = torch.ones(2, requires_grad=True)\ny = (x * x).sum()\ny.backward()\ny.backward()\n"
    ),
    "interrupted": "raise KeyboardInterrupt\n",
    "killed": "import signal\nos.kill(os.getpid(), signal.SIGTERM)\n",
}


def _ran(report: Path, folder: Path) -> tuple[int, list[str], dict[str, object]]:
    data = json.loads(report.read_text(encoding="utf-8"))
    facts = json.loads((folder / "facts.json").read_text(encoding="utf-8")) if (folder / "facts.json").is_file() else {}
    return data["meta"]["exit_status"], sorted(f["rule"] for f in data["findings"]), facts


@pytest.mark.parametrize("ending", ENDINGS, ids=list(ENDINGS))
def test_a_warm_script_ends_as_a_script_of_its_own(ending: str, tmp_path: Path) -> None:
    outcomes = []
    for how in ("own", "warm"):
        folder = tmp_path / how
        folder.mkdir()
        (folder / "script.py").write_text(FACTS + ENDINGS[ending], encoding="utf-8")
        command = ["run", "--format", "json", "--output", str(folder / "report.json"), str(folder / "script.py"), "an arg"]
        env = {"WARM_TEST": "1", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        if how == "own":
            children.run([sys.executable, "-m", "torchdoctor", *command], cwd=folder, env={**os.environ, **env},
                         capture_output=True, text=True, timeout=180)
        else:
            warm.command(command, folder, env)
        outcomes.append(_ran(folder / "report.json", folder))
    assert outcomes[0] == outcomes[1]
    assert outcomes[1][2] or ending == "killed", "the script's exit handler did not run"
