"""A GPT-2-style attention projection with loralib's MergedLinear (q, v adapted, fan_in_fan_out=True as
for GPT-2's Conv1D weights), trained a few steps on random features, then evaluated (merged)."""
import loralib as lora
import torch
import torch.nn as nn

torch.manual_seed(0)
qkv = lora.MergedLinear(16, 3 * 16, r=4, enable_lora=[True, False, True], fan_in_fan_out=True)
head = nn.Linear(3 * 16, 1)
model = nn.Sequential(qkv, nn.Tanh(), head)
lora.mark_only_lora_as_trainable(model)
optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
x, y = torch.randn(32, 16), torch.randn(32, 1)
for step in range(5):
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
model.eval()
with torch.no_grad():
    print("eval loss", nn.functional.mse_loss(model(x), y).item())
