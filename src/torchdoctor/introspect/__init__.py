"""What torchdoctor reads off live torch objects, shared by `check` and `run`: where a
module, tensor or class attribute was made in user code (`sites`), the tensors in a nested
batch (`tensors`), and the random generators an object carries (`rng`)."""
