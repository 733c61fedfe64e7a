"""Trains LightTS (models/LightTS.py) for classification a few steps on random series, with a chunk
size of 10 for series of length 25 (the model pads the series to a whole number of chunks)."""
from types import SimpleNamespace

import torch
from models.LightTS import Model

torch.manual_seed(0)
configs = SimpleNamespace(task_name="classification", seq_len=25, pred_len=0, enc_in=3, d_model=16,
                          dropout=0.1, num_class=4)
model = Model(configs, chunk_size=10)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(8, 25, 3)
y = torch.randint(0, 4, (8,))
for step in range(3):
    logits = model(x, None, None, None)
    loss = torch.nn.functional.cross_entropy(logits, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
