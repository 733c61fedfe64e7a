"""A stand-in for torchvision, for the mutation bench only (bench/mutation_bench.py).

torchvision from PyPI does not import beside this torch build, and the bench has no data sets:
this package gives the programs of the corpus the names they import (datasets, transforms,
utils, models) backed by small synthetic data of the real shapes, so they run unedited in
seconds. The images are learnable (each class has its own pattern plus noise), so a correct
program's loss falls and a broken one's does not. Sizes: TD_MUTATION_TRAIN_SIZE (default 1024)
and TD_MUTATION_TEST_SIZE (default 256) samples per data set.
"""

from . import datasets, models, transforms, utils  # noqa: F401

__version__ = "0.0+mutation-bench-stub"
