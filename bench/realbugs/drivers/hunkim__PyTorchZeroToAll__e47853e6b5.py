"""Runs the tutorial script as its README says (`python 12_1_rnn_basics.py`): it makes its own data."""
import runpy

runpy.run_path("12_1_rnn_basics.py", run_name="__main__")
