"""Trains MemTransformerLM (pytorch/mem_transformer.py) a few steps on random tokens with no memory
tokens (num_mem_tokens=0), a configuration train.py accepts (--num_mem_tokens 0)."""
import os
import sys

import torch

# utils/proj_adaptive_softmax.py parses torch.version.cuda at import; a CUDA build of torch (what
# the repository's users have) sets it, this CPU build does not: stand in its version string.
torch.version.cuda = torch.version.cuda or "12.1"
os.chdir("pytorch")  # mem_transformer.py appends the relative folder 'utils' to sys.path
sys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), "utils")]
from mem_transformer import MemTransformerLM  # noqa: E402

torch.manual_seed(0)
n_token, tgt_len, mem_len, bsz = 50, 8, 8, 2
model = MemTransformerLM(n_token, n_layer=2, n_head=2, d_model=16, d_head=8, d_inner=32,
                         dropout=0.0, dropatt=0.0, tgt_len=tgt_len, ext_len=0, mem_len=mem_len,
                         num_mem_tokens=0, cutoffs=[])
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
mems = tuple()
for step in range(3):
    data = torch.randint(0, n_token, (tgt_len + 1, bsz))
    out = model(data[:-1], data[1:], *mems)
    loss, mems = out[0], out[1:]
    print("step", step, "loss shape", tuple(loss.shape), "loss", loss.float().mean().item())
    opt.zero_grad()
    loss.float().mean().backward()
    opt.step()
