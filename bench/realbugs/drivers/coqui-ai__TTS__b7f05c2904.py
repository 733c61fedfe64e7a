"""One training step of a bandwidth-extension model with the enhancer's BWELoss (waveform, mel and
multi-resolution spectral L1 losses): a small 1-D conv net maps random 1 s waveforms at 48 kHz of two
lengths to outputs scored against random targets."""
import torch
import torch.nn as nn
from TTS.enhancer.layers.losses import BWELoss

torch.manual_seed(0)
model = nn.Sequential(nn.Conv1d(1, 4, 9, padding=4), nn.Tanh(), nn.Conv1d(4, 1, 9, padding=4))
criterion = BWELoss(device="cpu")
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x, y = torch.randn(2, 1, 48000) * 0.1, torch.randn(2, 1, 48000) * 0.1
lens = torch.tensor([48000, 40000])
for step in range(2):
    losses = criterion(model(x), y, lens)
    optimizer.zero_grad()
    losses["loss"].backward()
    optimizer.step()
    print(step, {k: round(v.item(), 4) for k, v in losses.items()})
