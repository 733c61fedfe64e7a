"""Evaluates ignite's PearsonCorrelation metric over a few float32 batches of regression outputs whose
values sit around 1e4 (a target on a raw, unnormalised scale), and compares it with NumPy's
corrcoef on the same data."""
import numpy as np
import torch
from ignite.metrics.regression import PearsonCorrelation

torch.manual_seed(0)
metric = PearsonCorrelation()
metric.reset()
preds, targets = [], []
for _ in range(4):
    y = 1e4 + torch.randn(64)
    y_pred = y + 0.3 * torch.randn(64)
    metric.update((y_pred, y))
    preds.append(y_pred)
    targets.append(y)
r = metric.compute()
expected = np.corrcoef(torch.cat(preds).double().numpy(), torch.cat(targets).double().numpy())[0, 1]
print("ignite:", r, "numpy:", expected)
assert abs(r - expected) < 1e-3, "Pearson correlation is off"
