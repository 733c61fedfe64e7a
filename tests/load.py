"""A busy machine, reproduced: processes that keep every core busy while a test measures.

Timing-based verdicts must not depend on the machine's load (a CI runner shares its cores), so
their tests run the same code with and without `cpu_hog()` and compare what was found.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cpu_hog(processes: int | None = None) -> Iterator[None]:
    """`processes` (default: one per CPU) busy loops `python -c 'while True: pass'`, killed after."""
    count = processes or os.cpu_count() or 2
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.3)  # let them start spinning
        yield
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()
