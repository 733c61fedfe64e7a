"""A conv net with a grouped LoRA Conv2d (loralib, groups=2), trained a few steps on random images,
then evaluated (the LoRA update merged into the conv weight)."""
import loralib as lora
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), lora.Conv2d(8, 8, 3, r=2, padding=1, groups=2),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
lora.mark_only_lora_as_trainable(model)
optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05)
x, y = torch.randn(8, 3, 16, 16), torch.randint(0, 4, (8,))
for step in range(5):
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
model.eval()
with torch.no_grad():
    print("eval loss", nn.functional.cross_entropy(model(x), y).item())
