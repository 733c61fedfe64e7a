"""Issue 29's probe must change nothing: the code between the model's output and the loss (a
plain function, a custom autograd.Function, a lambda) is traced in the warm-up steps, the ops
whose gradient is infinite at a point are kept with their inputs, and when a step's gradients
turn NaN (a distance's sqrt at 0, at step 2) each is re-run alone to find the one that made
them. The NaN then spreads to the weights, the same way with and without torchdoctor."""

import sys

import torch
from torch import nn


class Distance(torch.autograd.Function):
    @staticmethod
    def forward(ctx, squared):
        dist = squared.sqrt()
        ctx.save_for_backward(dist)
        return dist

    @staticmethod
    def backward(ctx, grad):
        (dist,) = ctx.saved_tensors
        return grad / (2 * dist)


def spread(z, gap):
    diff = z[:, None, :] - z[None, :, :]
    dist = (diff.pow(2).sum(-1) + gap).sqrt()
    return -dist.mean()


angle = lambda u, v: torch.acos(torch.nn.functional.cosine_similarity(u, v, dim=-1).clamp(-0.99, 0.99))  # noqa: E731

torch.manual_seed(0)
torch.set_num_threads(1)
encoder = nn.Sequential(nn.Linear(6, 16), nn.Dropout(0.2), nn.ReLU(), nn.Linear(16, 4))
optimizer = torch.optim.SGD(encoder.parameters(), lr=0.01)
for step in range(8):
    x = torch.randn(16, 6)
    optimizer.zero_grad()
    z = encoder(x)
    gap = 0.0 if step == 1 else 1e-3  # sqrt(0) on the diagonal at this step
    loss = spread(z, gap) + Distance.apply(z.pow(2).sum(-1) + 1.0).mean() + angle(z, z.roll(1, 0)).mean()
    loss.backward()
    optimizer.step()
torch.save({"encoder": encoder.state_dict(), "rng": torch.get_rng_state()}, sys.argv[1])
