"""Prepares a small Gemma-3-style GPT (the Gemma-3-1b-it configuration shrunk to 2 layers; it has a
local RoPE base) for sequential generation with litgpt.generate.sequentially.sequential on one CPU
device, as `litgpt generate_sequentially` does, and generates a few tokens from a prompt."""
import litgpt.generate.base as generate_base
import torch
from litgpt.config import Config
from litgpt.generate.sequentially import sequential
from litgpt.model import GPT

torch.manual_seed(0)
config = Config.from_name("Gemma-3-1b-it", n_layer=2, n_embd=64, n_head=2, n_query_groups=1, head_size=32,
                          intermediate_size=128, vocab_size=128, padded_vocab_size=128, block_size=64,
                          sliding_window_size=16)
model = GPT(config).eval()
model = sequential(model, torch.device("cpu"), max_seq_length=32, devices=1)
prompt = torch.randint(0, 128, (8,))
tokens = generate_base.generate(model, prompt, max_returned_tokens=16, temperature=0.8, top_k=10)
print(tokens.tolist())
