"""torchdoctor where training already runs: each module is a small, optional adapter over the
same engine (`torchdoctor.watch()` and the run session), importing its framework only when used.

| module | what | extra |
| --- | --- | --- |
| `lightning` | `TorchDoctorCallback` for `lightning.pytorch.Trainer` | `torchdoctor[lightning]` |
| `huggingface` | `TorchDoctorCallback` for `transformers.Trainer` | `torchdoctor[huggingface]` |
| `pytest_plugin` | the `torchdoctor` fixture and marker (a `pytest11` entry point) | pytest |

The TensorBoard writer they share with `run --tensorboard DIR` is a report writer: renderers/tensorboard.py.
"""
