"""A GradScaler whose scaled gradients are clipped, a model called once per sample, a
`.item()` every step (the sync check is made to treat CPU tensors as device tensors) and an
epoch-based LR scheduler stepped every batch, in one deterministic run that saves its final
state (argv[1]) for the no-harm comparison."""

import os
import sys

os.environ["TORCHDOCTOR_DEVICE_CHECKS_ON_CPU"] = "1"

import torch  # noqa: E402
from torch import nn  # noqa: E402

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.1)
running = 0.0
for step in range(30):
    optimizer.zero_grad()
    inputs = torch.randn(16, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = torch.cat([model(row.unsqueeze(0)) for row in inputs])  # one sample at a time
        loss = nn.functional.cross_entropy(logits, torch.randint(0, 2, (16,)))
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    scheduler.step()
    running += loss.item()

torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state(),
            "scale": torch.tensor(scaler.get_scale()),
            "lr": torch.tensor(scheduler.get_last_lr())}, sys.argv[1])
