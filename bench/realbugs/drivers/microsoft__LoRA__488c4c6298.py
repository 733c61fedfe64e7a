"""A conv net built with loralib's Conv2d layers, one of them with LoRA off (r=0, the default), trained a
few steps on random images, then switched to eval mode (where LoRA layers merge their weights)."""
import loralib as lora
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(lora.Conv2d(3, 8, 3, r=0, padding=1), nn.ReLU(), lora.Conv2d(8, 8, 3, r=2, padding=1),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
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
