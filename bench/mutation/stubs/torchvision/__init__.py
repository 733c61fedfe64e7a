"""A stand-in for torchvision, for the mutation bench only (bench/mutation_bench.py).

The bench has no data sets, and torchvision from PyPI does not import beside the torch 2.13.0
CPU build: this package gives the programs of the corpus the names they import (datasets,
transforms, utils, models) backed by small synthetic data of the real shapes, so they run
unedited in seconds. The images are learnable (each class has its own pattern plus noise), so a
correct program's loss falls and a broken one's does not. Sizes: TD_MUTATION_TRAIN_SIZE (default
1024) and TD_MUTATION_TEST_SIZE (default 256) samples per data set.

Where the real torchvision imports beside the installed torch (torch 2.14.1 with torchvision
0.29.1, the newest-torch leg of docs/compat.md), the bench sets TD_MUTATION_REAL_TORCHVISION=1
and this package hands over to it: the real transforms, models and utils run, and only its data
sets are replaced by the synthetic ones above, giving PIL images as the real ones do.
"""

import os
import sys

__version__ = "0.0+mutation-bench-stub"


def _real():
    """Import the real torchvision from the path behind this stand-in (None when it does not import)."""
    import importlib.machinery
    import importlib.util

    stand_in = sys.modules["torchvision"]
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("torchvision", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules["torchvision"] = module  # its own `from torchvision import ...` must find it
    try:
        spec.loader.exec_module(module)
    except Exception:  # noqa: BLE001 - an unusable torchvision: the stand-in stays
        sys.modules["torchvision"] = stand_in
        for name in [n for n in sys.modules if n.startswith("torchvision.")]:
            del sys.modules[name]
        return None
    return module


_REAL = _real() if os.environ.get("TD_MUTATION_REAL_TORCHVISION") == "1" else None
if _REAL is not None:
    import td_synthetic_images

    td_synthetic_images.REAL = True
    for _name in td_synthetic_images.DATASETS:
        setattr(_REAL.datasets, _name, getattr(td_synthetic_images, _name))
    sys.modules["torchvision"] = _REAL  # what `import torchvision` returns from here on
else:
    from . import datasets, models, transforms, utils  # noqa: F401
