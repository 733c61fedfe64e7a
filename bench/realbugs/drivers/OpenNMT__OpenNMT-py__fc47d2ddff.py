"""Trains OpenNMT's GPT-style language-model decoder (onmt/decoders/transformer.py
TransformerLMDecoder) a step on a batch of 3 random token sequences (with padding), 2 heads, then
decodes stepwise; as the LM model builds it: word embeddings with sinusoidal positions."""
import torch
from onmt.decoders.transformer import TransformerLMDecoder
from onmt.modules import Embeddings

torch.manual_seed(0)
vocab, pad, d_model = 50, 1, 32
emb = Embeddings(d_model, vocab, pad, position_encoding=True)
decoder = TransformerLMDecoder(2, d_model, 2, 64, False, "scaled-dot", 0.1, 0.1, emb, 0, False)
generator = torch.nn.Linear(d_model, vocab)
tgt = torch.randint(2, vocab, (7, 3, 1))  # len x batch x features
tgt[5:, 0] = pad
params = list(decoder.parameters()) + list(generator.parameters())
optimizer = torch.optim.Adam(params, lr=1e-3)
decoder.init_state()
dec_out, attns = decoder(tgt[:-1])
loss = torch.nn.functional.cross_entropy(generator(dec_out).view(-1, vocab), tgt[1:].view(-1), ignore_index=pad)
optimizer.zero_grad()
loss.backward()
optimizer.step()
print("loss", loss.item())
decoder.eval()
with torch.no_grad():
    decoder.init_state()
    for step in range(3):
        out, _ = decoder(tgt[step:step + 1], step=step)
print("stepwise output", tuple(out.shape))
