"""What torchdoctor reads off live torch objects, shared by `check` and `run`: where a
module, tensor or class attribute was made in user code (`sites`), the tensors in a nested
batch (`tensors`), the random generators an object carries (`rng`), and what the installed
dispatcher holds for an op (`dispatcher`: its kernels per dispatch key, and which serve a call)."""
