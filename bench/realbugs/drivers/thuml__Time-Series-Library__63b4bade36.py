"""Runs the cyclic encoder layer (layers/Transformer_EncDec.py CyclicEncoderLayer) with its full-MLP
option on a batch of 4 embedded series (3 variates x 5 cycles), forward and backward, as the
iTimesformer cyclic-attention model builds it."""
import torch
from layers.SelfAttention_Family import AttentionLayer, FullAttention
from layers.Transformer_EncDec import CyclicEncoderLayer

torch.manual_seed(0)
B, C, N, D, d_temp, heads = 4, 3, 5, 16, 8, 2
layer = CyclicEncoderLayer(
    AttentionLayer(FullAttention(False, 1, attention_dropout=0.1), D, heads),
    AttentionLayer(FullAttention(False, 1, attention_dropout=0.1), d_temp, heads),
    D, d_temp, N, C, 32, dropout=0.1, activation="gelu", full_mlp=True)
x = torch.randn(B, C * N, D)
out, _ = layer(x)
print(out.shape)
out.pow(2).mean().backward()
