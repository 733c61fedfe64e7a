"""The memory account of `torchdoctor run`: where the memory went, what keeps it alive, how it grows.

- `storages.py`  what a tensor costs: its storage, counted once however many views share it
- `graphs.py`    the tensors an autograd graph saved for backward (read without unpacking them)
- `census.py`    every live tensor storage by owner (parameters, gradients, optimizer state,
                 activations by module, data, the rest by holder), found by walking from what the
                 user's code can name; run on the first steps and when growth is seen
- `holders.py`   the rest named in the user's terms: `history` (a list created at train.py:31,
                 appended at train.py:58), `model.maps`, a hook's closure, an exception kept
- `process.py`   cheap per-step signals: resident memory, the CUDA caching allocator's numbers
- `timeline.py`  the per-step series and the censuses, as the JSON report carries them
- `table.py`     the per-owner table `torchdoctor run --memory` prints (no torch)

Nothing here attaches anything to the user's objects or allocates on a device: it reads.
"""
