"""Builds a small LLaMA 3 of train_llama3.py (2 layers, 64 wide) and evaluates one batch in float32
and, after model.to(torch.float64) (a double-precision reference, as when checking gradients), in
float64: the two must agree to float32 rounding."""
import copy

import torch
from train_llama3 import LLaMA, LlamaConfig

torch.manual_seed(0)
config = LlamaConfig(version="3.1", n_layer=2, n_head=4, n_embd=64, ffn_dim_multiplier=1.0,
                     tied_embeddings=False, block_size=64, vocab_size=256, n_kv_head=2, multiple_of=32,
                     use_kv=False)
model = LLaMA(config)
idx = torch.randint(0, config.vocab_size, (2, 32))
with torch.no_grad():
    logits32, loss32 = model(idx, targets=idx)
    logits64, loss64 = copy.deepcopy(model).to(torch.float64)(idx, targets=idx)
diff = (logits64.float() - logits32).abs().max().item()
print("loss float32", loss32.item(), "float64", loss64.item(), "max logit difference", diff)
assert diff < 1e-3, "the float64 model disagrees with the float32 one"
