"""main.py's checkpoint and --resume path for the EMA model: train a small model a few steps with a timm
ModelEma, save {'model', 'model_ema'} as main.py does, then resume into a fresh model and EMA with
utils._load_checkpoint_for_ema and evaluate the restored EMA against the saved one."""
import torch
import torch.nn as nn
import utils
from timm.utils import ModelEma, get_state_dict

torch.manual_seed(0)


def make():
    return nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))


model = make()
model_ema = ModelEma(model, decay=0.9, device="", resume="")
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
x, y = torch.randn(64, 10), torch.randint(0, 3, (64,))
for step in range(20):
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    model_ema.update(model)
torch.save({"model": model.state_dict(), "model_ema": get_state_dict(model_ema)}, "checkpoint.pth")

resumed = make()
resumed_ema = ModelEma(resumed, decay=0.9, device="", resume="")
checkpoint = torch.load("checkpoint.pth", map_location="cpu")
resumed.load_state_dict(checkpoint["model"])
utils._load_checkpoint_for_ema(resumed_ema, checkpoint["model_ema"])
with torch.no_grad():
    saved = nn.functional.cross_entropy(model_ema.ema(x), y).item()
    restored = nn.functional.cross_entropy(resumed_ema.ema(x), y).item()
print("EMA eval loss saved", saved, "after resume", restored)
