"""A small 1-D conv net with a LoRA Conv1d (loralib, as the README shows for Conv2d), trained a few
steps on random sequences, then evaluated (the weights merged)."""
import loralib as lora
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(lora.Conv1d(4, 8, 3, r=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                      nn.Linear(8, 3))
lora.mark_only_lora_as_trainable(model)
optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
x, y = torch.randn(16, 4, 20), torch.randint(0, 3, (16,))
for step in range(5):
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
model.eval()
with torch.no_grad():
    print("eval loss", nn.functional.cross_entropy(model(x), y).item())
