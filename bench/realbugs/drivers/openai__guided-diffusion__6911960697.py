"""Trains a small UNet (guided_diffusion.script_util.create_model) one step with MixedPrecisionTrainer
in fp16 and, from the same weights and batch, one step in fp32, both with SGD, and checks that the two
updates agree (fp16 training must only differ by rounding)."""
import copy

import torch
import torch.nn.functional as F
from guided_diffusion.fp16_util import MixedPrecisionTrainer
from guided_diffusion.script_util import create_model

torch.manual_seed(0)
kw = dict(image_size=16, num_channels=32, num_res_blocks=1, channel_mult="1,2", attention_resolutions="8")
model32 = create_model(**kw, use_fp16=False)
model16 = create_model(**kw, use_fp16=True)
model16.load_state_dict(model32.state_dict())
before = copy.deepcopy(model32.state_dict())

x, noise = torch.randn(4, 3, 16, 16), torch.randn(4, 3, 16, 16)
t = torch.randint(0, 1000, (4,))
deltas = {}
for name, model, fp16 in [("fp32", model32, False), ("fp16", model16, True)]:
    trainer = MixedPrecisionTrainer(model=model, use_fp16=fp16)
    opt = torch.optim.SGD(trainer.master_params, lr=0.01)
    trainer.zero_grad()
    trainer.backward(F.mse_loss(model(x, t).float(), noise))
    assert trainer.optimize(opt), "the step was skipped"
    deltas[name] = {k: (v.float() - before[k]).norm().item() for k, v in model.state_dict().items()
                    if v.dtype.is_floating_point}
# fp16 rounds the weights themselves (about 1e-3 here), hence the absolute slack
bad = [k for k in deltas["fp32"] if abs(deltas["fp16"][k] - deltas["fp32"][k]) > 0.01 + 0.1 * deltas["fp32"][k]]
print("parameters whose fp16 update differs from the fp32 one:", bad[:5], len(bad))
assert not bad, "the fp16 update differs from the fp32 update"
