"""Runs run.py as the README's scripts do (long-term forecasting, train then test) on a small
generated hourly CSV (custom data) with DLinear, one epoch, and --inverse (metrics on the original
scale)."""
import os
import runpy
import sys

import numpy as np
import pandas as pd

np.Inf = np.inf  # the repository predates NumPy 2 (utils/tools.py reads np.Inf)

os.makedirs("dataset/synth", exist_ok=True)
rng = np.random.default_rng(0)
n = 600
t = np.arange(n)
df = pd.DataFrame({"date": pd.date_range("2020-01-01", periods=n, freq="60min").astype(str)})
for i, name in enumerate(["a", "b", "OT"]):
    df[name] = 10 + 5 * np.sin(t / (8 + 4 * i)) + rng.standard_normal(n)
df.to_csv("dataset/synth/synth.csv", index=False)

sys.argv = ["run.py", "--task_name", "long_term_forecast", "--is_training", "1", "--model_id", "synth",
            "--model", "DLinear", "--data", "custom", "--root_path", "./dataset/synth/", "--data_path", "synth.csv",
            "--features", "M", "--seq_len", "48", "--label_len", "24", "--pred_len", "24", "--enc_in", "3",
            "--dec_in", "3", "--c_out", "3", "--d_model", "16", "--d_ff", "32", "--e_layers", "1",
            "--train_epochs", "1", "--batch_size", "16", "--num_workers", "0", "--itr", "1", "--inverse"]
runpy.run_path("run.py", run_name="__main__")
