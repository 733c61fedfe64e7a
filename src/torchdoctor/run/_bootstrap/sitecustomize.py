"""Start-up hook of `torchdoctor run` (this folder is put first on PYTHONPATH by the runner).

It must never break the program it runs: every step is guarded, torch is not imported here
(observation begins when the program imports torch), this folder is taken off `sys.path` so
the program sees the path it would see without us, and a `sitecustomize` this one shadows is
still run.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _start() -> None:
    if not os.environ.get("TORCHDOCTOR_RUN_DIR"):
        return
    try:
        from torchdoctor.run import boot
    except ImportError:  # another interpreter than the runner's: nothing to observe with
        return
    boot.start()


def _run_shadowed_sitecustomize() -> None:
    import importlib.machinery
    import importlib.util

    path = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
try:
    _start()
except Exception:  # noqa: BLE001 - observing must never stop the program from running
    pass
_run_shadowed_sitecustomize()
