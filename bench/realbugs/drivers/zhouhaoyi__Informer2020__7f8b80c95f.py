"""Informer's ProbSparse attention keeps the top u = factor * ceil(ln L) queries; when u reaches the
sequence length every query is kept and it must agree with full attention. Checks that on random
(B, L, H, D) queries, keys and values."""
import torch
from models.attn import FullAttention, ProbAttention

torch.manual_seed(0)
B, L, H, D = 2, 9, 4, 8  # factor 3 * ceil(ln 9) = 9 = L: every query is selected
q, k, v = (torch.randn(B, L, H, D) for _ in range(3))
prob = ProbAttention(mask_flag=False, factor=3, attention_dropout=0.0).eval()
full = FullAttention(mask_flag=False, attention_dropout=0.0).eval()
with torch.no_grad():
    out_prob, _ = prob(q, k, v, None)       # (B, H, L, D)
    out_full, _ = full(q, k, v, None)       # (B, L, H, D)
err = (out_prob - out_full.transpose(1, 2)).abs().max().item()
print("max difference from full attention:", err)
assert err < 1e-5, "ProbAttention with every query kept differs from full attention"
