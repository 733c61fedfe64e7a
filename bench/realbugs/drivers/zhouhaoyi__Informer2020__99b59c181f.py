"""Runs main_informer.py as the README does, on a small generated hourly CSV (custom data), with a tiny
model, one epoch, and --do_predict (forecasting past the end of the data); the prediction horizon is
longer than the decoder's start token."""
import os
import runpy
import sys

import numpy as np
import pandas as pd

np.Inf = np.inf  # the repository predates NumPy 2 (utils/tools.py reads np.Inf)

os.makedirs("data/synth", exist_ok=True)
rng = np.random.default_rng(0)
n = 400
t = np.arange(n)
df = pd.DataFrame({"date": pd.date_range("2020-01-01", periods=n, freq="60min").astype(str)})
for i, name in enumerate(["a", "b", "OT"]):
    df[name] = np.sin(t / (10 + 5 * i)) + 0.1 * rng.standard_normal(n)
df.to_csv("data/synth/synth.csv", index=False)

sys.argv = ["main_informer.py", "--model", "informer", "--data", "custom", "--root_path", "./data/synth/",
            "--data_path", "synth.csv", "--features", "M", "--target", "OT", "--freq", "h",
            "--seq_len", "32", "--label_len", "8", "--pred_len", "16", "--enc_in", "3", "--dec_in", "3",
            "--c_out", "3", "--d_model", "16", "--n_heads", "2", "--e_layers", "2", "--d_layers", "1",
            "--d_ff", "32", "--factor", "3", "--itr", "1", "--train_epochs", "1", "--batch_size", "16",
            "--do_predict"]
runpy.run_path("main_informer.py", run_name="__main__")
