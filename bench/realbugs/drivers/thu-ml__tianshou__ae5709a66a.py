"""Trains BranchingDQN with the repository's test (test/discrete/test_bdq.py: Pendulum split into
discrete branches, offpolicy_trainer) on the CPU, with a small configuration: one short epoch,
small networks, two environments each for training and testing."""
import runpy
import sys

import numpy as np

np.bool8 = np.bool_  # gym 0.25's env checker uses this alias, gone in numpy 2

sys.argv = ["test_bdq.py", "--device", "cpu", "--epoch", "1", "--step-per-epoch", "100", "--batch-size", "32",
            "--training-num", "2", "--test-num", "2", "--buffer-size", "2000", "--common-hidden-sizes", "64",
            "--action-hidden-sizes", "32", "--value-hidden-sizes", "32", "--action-per-branch", "5"]
test = runpy.run_path("test/discrete/test_bdq.py", run_name="test_bdq")  # not __main__: no rendering at the end
test["test_bdq"](test["get_args"]())
