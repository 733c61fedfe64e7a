"""A warm Python for `tests/warm.py`: torch is imported once, then each script runs in a fork.

Started as `python tests/warm_server.py`; it reads one JSON request a line on stdin and answers on
stdout with `{"pid": PID}` when the script's process has started and `{"returncode": N}` when it
has ended (negative: killed by that signal, as `subprocess` says it). The forked child becomes
what `python SCRIPT ARGS...` would be in the request's environment and folder: its own stdin,
stdout and stderr, `sys.argv`, `sys.path[0]`, a fresh `__main__`, and Python's own ending (an
uncaught exception is printed and kept in `sys.last_value`, non-daemon threads are joined, the
exit handlers run, a KeyboardInterrupt ends it by SIGINT). The environment carries `torchdoctor
run`'s bootstrap, so the children the script starts are observed as under `run`; the script's
own process starts observing the way the bootstrap's sitecustomize starts it (`boot.start()`),
which finds torch already imported, as it would right after the script's `import torch`.

Nothing here may run a torch operation before forking: a thread pool started in this process
would not survive the fork. Its OMP_NUM_THREADS (read when torch is imported) is the scripts'.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
import threading
import traceback
import types
from typing import Any, NoReturn

import torch  # noqa: F401 - the point of this process: imported once, before every fork

from torchdoctor.observe.crash.explain import explainers
from torchdoctor.observe.detectors import all_detectors
from torchdoctor.run import boot
from torchdoctor.run.records import ENV_PARENT

# what observation imports the moment a script imports torch (boot._on_torch_imported), imported
# once here too: half a CPU-second a script
all_detectors()
explainers()


def main() -> None:
    for line in sys.stdin.buffer:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        _reply({"pid": pid})
        _, status = os.waitpid(pid, 0)
        _reply({"returncode": os.waitstatus_to_exitcode(status)})


def _reply(data: dict[str, Any]) -> None:
    os.write(1, (json.dumps(data) + "\n").encode())


def _child(request: dict[str, Any]) -> NoReturn:
    try:
        _become(request)
    except BaseException:  # noqa: BLE001 - the harness must hear of it, not a second server
        traceback.print_exc()
        os._exit(111)
    os._exit(_script(request["argv"][0]))


def _become(request: dict[str, Any]) -> None:
    """Turn this fork into `python SCRIPT ARGS...` started in the request's folder and environment."""
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - not the requests: the process's own stdin
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ[ENV_PARENT] = str(os.getppid())  # the process that started the script is this server
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))  # what `python SCRIPT` puts first
    boot.start()  # what the bootstrap's sitecustomize does in a process `torchdoctor run` starts


def _script(path: str) -> int:
    """Run the script as `__main__` and end as Python ends a program; return the exit status."""
    with open(path, "rb") as file:
        code = compile(file.read(), path, "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__file__ = path
    sys.modules["__main__"] = module
    status, interrupted = 0, False
    try:
        exec(code, module.__dict__)  # noqa: S102 - running the script is the job
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except BaseException as exc:  # noqa: BLE001 - what Python prints and keeps for an uncaught one
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None  # the script's frames only
        exc = exc.with_traceback(tb)
        sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
        sys.excepthook(type(exc), exc, tb)
        status, interrupted = 1, isinstance(exc, KeyboardInterrupt)
    threading._shutdown()  # type: ignore[attr-defined]  # Python joins non-daemon threads at exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return status


def _exit_status(code: object) -> int:
    """Python's own reading of `SystemExit(code)`."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    main()
