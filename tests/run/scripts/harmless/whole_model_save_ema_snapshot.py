"""What users keep: a whole model saved with torch.save (during warm-up and at the end), an EMA
copy made with copy.deepcopy and updated every step, a best-model snapshot (deepcopy of the
state dict), pickle of the model, optimizer and scheduler; evaluation phases in eval mode
(the detectors that watch eval/train mode and NaN losses are all active here). The script
prints its modules' hook counts and repr: observing must not show in them."""

import copy
import io
import pickle
import sys

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)
ema = copy.deepcopy(model)
x, y = torch.randn(64, 8), torch.randint(0, 3, (64,))
best, best_loss = None, float("inf")
for step in range(24):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    scheduler.step()
    with torch.no_grad():
        for e, p in zip(ema.parameters(), model.parameters()):
            e.mul_(0.9).add_(p, alpha=0.1)
    if step == 1:  # during torchdoctor's warm-up
        torch.save(model, io.BytesIO())
        copy.deepcopy(model)
    if step % 6 == 5:
        model.eval()
        with torch.no_grad():
            for _ in range(4):
                val = nn.functional.cross_entropy(model(x), y).item()
        model.train()
        if val < best_loss:
            best, best_loss = copy.deepcopy(model.state_dict()), val
hooks = [len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks) + len(m._backward_pre_hooks) for m in model.modules()]
print("hooks", hooks, "tensor hooks", [p._backward_hooks for p in model.parameters()])
print(repr(model))
print("state", sorted(model.state_dict()))
for thing in (model, optimizer, scheduler, ema):
    pickle.dumps(thing)
snapshot = copy.deepcopy(model)
torch.save(model, sys.argv[1] + ".model")
torch.save({"model": model.state_dict(), "ema": ema.state_dict(), "best": best, "snapshot": snapshot.state_dict(),
            "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])
