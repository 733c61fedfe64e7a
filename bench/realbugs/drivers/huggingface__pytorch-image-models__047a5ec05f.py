"""Trains a small classifier on the CPU with timm's Mixup/CutMix and SoftTargetCrossEntropy, as train.py
sets them up (--mixup 0.8 --cutmix 1.0 --smoothing 0.1), on random images."""
import torch
import torch.nn as nn
from timm.data import Mixup
from timm.loss import SoftTargetCrossEntropy

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                      nn.Linear(8, 10))
mixup_fn = Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1, num_classes=10)
loss_fn = SoftTargetCrossEntropy()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x, y = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
    x, y = mixup_fn(x, y)
    loss = loss_fn(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
