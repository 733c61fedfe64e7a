"""Generates greedily with OpenNMT's language-model decoder (onmt/decoders/transformer.py
TransformerLMDecoder, rotary position embeddings: max_relative_positions=-1), without flash
attention, from a long prompt of 2040 tokens for 12 more tokens, as LM inference decodes: the
prompt at step 0, then one token per step with the KV cache."""
import torch
from onmt.decoders.transformer import TransformerLMDecoder
from onmt.modules import Embeddings

torch.manual_seed(0)
vocab, pad, d_model = 50, 1, 32
emb = Embeddings(d_model, vocab, pad)
decoder = TransformerLMDecoder(1, d_model, 2, 64, False, "scaled-dot", 0.0, 0.0, emb, -1, 0, False).eval()
generator = torch.nn.Linear(d_model, vocab)
prompt = torch.randint(2, vocab, (1, 2040, 1))  # batch x len x features
with torch.no_grad():
    out, _ = decoder(prompt, step=0)
    pos = prompt.size(1)
    for _ in range(12):
        token = generator(out[:, -1]).argmax(-1).view(1, 1, 1)
        out, _ = decoder(token, step=pos)
        pos += 1
print("generated up to position", pos)
