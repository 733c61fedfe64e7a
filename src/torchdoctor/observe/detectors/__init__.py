"""The runtime detectors: every `Detector` subclass of the modules here and of the modules the
`torchdoctor.run` plugins name, in the order they declare (`ORDER`, core/plugins.py).

To add one: write a `Detector` subclass in a module here (see docs/run-detectors-dev.md).
"""

from __future__ import annotations

import functools

from torchdoctor.core import plugins
from torchdoctor.observe.detector import Detector


@functools.cache
def all_detectors() -> tuple[type[Detector], ...]:
    """The built-in detectors and the plugins', in the order the session installs them."""
    found = [unit for module in plugins.modules("torchdoctor.run") for unit in vars(module).values()
             if isinstance(unit, type) and issubclass(unit, Detector) and unit.__module__ == module.__name__]
    return tuple(plugins.ordered(found))
