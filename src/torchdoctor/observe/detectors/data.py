"""TD142 before it crashes: lambdas and nested functions given to a loader with workers.

Under the `fork` start method (Linux before Python 3.14) a lambda `collate_fn` works; under
`spawn` / `forkserver` (Windows, macOS, Python 3.14+ on Linux) the same DataLoader dies. The
check runs once, the first time each loader with workers is iterated, on `collate_fn` and
`worker_init_fn` only (never the dataset, which may be large), and only for lambdas and
functions defined inside another function, which no start method can send by reference.
"""

from __future__ import annotations

from torchdoctor.core.locate import is_user_file
from torchdoctor.observe.crash.describe import function_label, picklable
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import LoaderIter
from torchdoctor.rules.data.unpicklable_worker_function import RULE


class WorkerFunctionsPicklable(Detector):
    ORDER = 130
    rules = (RULE,)

    def on_loader_iter(self, event: LoaderIter) -> None:
        loader = event.loader
        if event.index != 1 or not getattr(loader, "num_workers", 0):
            return
        for argument in ("collate_fn", "worker_init_fn"):
            function = getattr(loader, argument, None)
            nested = getattr(function, "__name__", "") == "<lambda>" or "<locals>" in getattr(function, "__qualname__", "")
            if not nested or picklable(function):
                continue
            code = getattr(function, "__code__", None)
            if code is None or not is_user_file(code.co_filename):
                continue
            at = (code.co_filename, code.co_firstlineno)
            self.ctx.report(RULE, at=at, key=argument,
                            fields={"argument": argument, "what": function_label(function)})
