"""Trains a small regression model with the language model's RAdam optimizer
(language-model/model_word_ada/radam.py) for a few steps on random data."""
import sys

import torch

sys.path.insert(0, "language-model")
from model_word_ada.radam import RAdam

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
optimizer = RAdam(model.parameters(), lr=1e-3)
x, y = torch.randn(64, 8), torch.randn(64, 1)
for step in range(10):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    print(step, loss.item())
