"""The built-in runtime detectors, in the order the session installs them.

To add one: write a `Detector` subclass in a module here and list it in `DETECTORS`
(see docs/run-detectors-dev.md).
"""

from __future__ import annotations

from torchdoctor.run.detector import Detector

DETECTORS: tuple[type[Detector], ...] = ()
