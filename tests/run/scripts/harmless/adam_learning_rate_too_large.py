"""Adam at a learning rate far above its weights' scale (TD495 fires), with a zero-initialised
output layer and a second optimizer (SGD) for a critic head that stays silent: the first steps are measured on copies
only, and the weights end bit for bit as a plain run leaves them."""

import sys

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
body = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU())
head, critic = nn.Linear(256, 4), nn.Linear(256, 1)
nn.init.zeros_(head.weight)
optimizer = torch.optim.Adam([*body.parameters(), *head.parameters()], lr=0.1)
critic_optimizer = torch.optim.SGD(critic.parameters(), lr=1e-2, momentum=0.9)
x, y = torch.randn(128, 256), torch.randint(0, 4, (128,))
for step in range(8):
    optimizer.zero_grad()
    critic_optimizer.zero_grad()
    features = body(x)
    loss = nn.functional.cross_entropy(head(features), y) + (critic(x).squeeze(1) - y.float()).pow(2).mean()
    loss.backward()
    optimizer.step()
    critic_optimizer.step()
print(f"loss {loss.item():.6f}")
torch.save({"body": body.state_dict(), "head": head.state_dict(), "critic": critic.state_dict(),
            "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])
