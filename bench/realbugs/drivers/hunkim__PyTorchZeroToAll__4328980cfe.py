"""Runs the tutorial script as its README says (`python 12_2_hello_rnn.py`): it makes its own data."""
import runpy

runpy.run_path("12_2_hello_rnn.py", run_name="__main__")
