"""A Lightning-style loop: a module with training_step / configure_optimizers, initialised with
`module.apply`, a state_dict hook, a trainer that inspects the modules it trains (named_modules,
hook counts, as Lightning's and accelerate's wrappers do) and checkpoints through state_dict."""

import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class LitClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Dropout(0.1), nn.Linear(20, 4))
        self.seen_in_state_dict = 0
        self._register_state_dict_hook(self._count)

    @staticmethod
    def _count(module, state, prefix, local_metadata):
        module.seen_in_state_dict += 1

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, index):
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=3e-3)
        return optimizer, torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=20)


def init(module):
    if isinstance(module, nn.Linear):
        nn.init.xavier_uniform_(module.weight)
        nn.init.zeros_(module.bias)


def fit(module, loader, epochs):
    optimizer, scheduler = module.configure_optimizers()
    for epoch in range(epochs):
        module.train()
        for index, batch in enumerate(loader):
            optimizer.zero_grad(set_to_none=True)
            loss = module.training_step(batch, index)
            loss.backward()
            optimizer.step()
            scheduler.step()
        hooks = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for _, m in module.named_modules())
        print(f"epoch {epoch}: loss {loss.item():.6f}, modules {len(list(module.named_modules()))}, hooks {hooks}")
    return optimizer


torch.manual_seed(0)
torch.set_num_threads(1)
module = LitClassifier()
module.apply(init)
data = TensorDataset(torch.randn(80, 10), torch.randint(0, 4, (80,)))
optimizer = fit(module, DataLoader(data, batch_size=16, shuffle=True), epochs=3)
state = module.state_dict()
print("state_dict hook ran", module.seen_in_state_dict)
torch.save({"model": state, "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])
