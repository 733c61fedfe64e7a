"""`torchdoctor check --model PATH --input-shape 3,224,224 --num-classes 10`: a saved model,
checked on a synthetic batch.

TorchScript and `torch.export` archives load without running code from the file. A full
pickle (`torch.save(model)`) runs code when loaded, so it is only loaded with
`--trust-pickle`.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import torch
from torch import nn

from torchdoctor.core.errors import UsageError


def parse_shape(text: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(part) for part in text.replace("x", ",").split(",") if part.strip())
    except ValueError:
        dims = ()
    if not dims or any(d <= 0 for d in dims):
        raise UsageError(f"--input-shape {text!r}: expected positive sizes without the batch, e.g. 3,224,224")
    return dims


def archive_kind(path: Path) -> str:
    """"torchscript", "export" or "pickle" (a torch.save file, zip or legacy)."""
    if not zipfile.is_zipfile(path):
        return "pickle"
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    if any(n.endswith(("serialized_exported_program.json", "archive_format")) or "/models/" in n for n in names):
        return "export"
    if any("/code/" in n or n.endswith("constants.pkl") for n in names):
        return "torchscript"
    return "pickle"


def example_batch_size(path: Path) -> int | None:
    """The batch size a torch.export archive was exported with (its shapes may be static)."""
    if archive_kind(path) != "export":
        return None
    try:
        example = torch.export.load(str(path)).example_inputs
    except Exception:
        return None
    tensors = [t for t in (example[0] if example else ()) if isinstance(t, torch.Tensor) and t.dim() > 0]
    return tensors[0].shape[0] if tensors else None


def load_model(path: Path, trust_pickle: bool) -> nn.Module:
    if not path.is_file():
        raise UsageError(f"--model {path}: no such file")
    kind = archive_kind(path)
    try:
        if kind == "torchscript":
            return torch.jit.load(str(path), map_location="cpu")
        if kind == "export":
            return torch.export.load(str(path)).module()
        loaded = _load_pickle(path, trust_pickle)
    except UsageError:
        raise
    except Exception as exc:
        raise UsageError(f"--model {path}: cannot load it as {kind}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    if isinstance(loaded, nn.Module):
        return loaded
    if isinstance(loaded, dict):
        raise UsageError(
            f"--model {path} holds a state_dict, not a model: the check needs the model's class; "
            "write a factory (path/to/file.py:make) that builds the model and loads it"
        )
    raise UsageError(f"--model {path} holds a {type(loaded).__name__}, not a torch.nn.Module")


def _load_pickle(path: Path, trust_pickle: bool) -> Any:
    try:
        return torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception:
        if not trust_pickle:
            raise UsageError(
                f"--model {path} is a pickled model and loading it runs code from the file: pass --trust-pickle "
                "if you trust it, or save it with torch.jit.save / torch.export.save"
            ) from None
    return torch.load(str(path), map_location="cpu", weights_only=False)


def synthetic_batch(shape: tuple[int, ...], batch_size: int, num_classes: int | None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Inputs and class targets from a private generator (the global RNG is not touched)."""
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(batch_size, *shape, generator=generator)
    targets = torch.randint(0, num_classes, (batch_size,), generator=generator) if num_classes else None
    return inputs, targets
