"""Weights updated by hand, with no torch optimizer (as pytorch/examples' word_language_model
does): `p.data.add_(p.grad, alpha=-lr)` after clipping, a recurrent hidden state detached
between batches, a running loss kept as a number."""

import sys

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
rnn, head = nn.LSTM(6, 12), nn.Linear(12, 5)
params = [*rnn.parameters(), *head.parameters()]
data, targets = torch.randn(40, 4, 6), torch.randint(0, 5, (40, 4))
hidden = (torch.zeros(1, 4, 12), torch.zeros(1, 4, 12))
lr, total = 0.5, 0.0
for i in range(0, 40, 8):
    hidden = tuple(h.detach() for h in hidden)
    for p in params:
        p.grad = None
    out, hidden = rnn(data[i:i + 8], hidden)
    loss = nn.functional.cross_entropy(head(out).view(-1, 5), targets[i:i + 8].reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 0.25)
    for p in params:
        p.data.add_(p.grad, alpha=-lr)
    total += loss.item()
print(f"total {total:.6f}")
torch.save({"rnn": rnn.state_dict(), "head": head.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])
