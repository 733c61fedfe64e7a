"""What a tensor costs: the storage it lives in, counted once however many tensors view it.

Views (`x[:1]`, `x.view(...)`, `x.t()`, a parameter saved for backward as `weight.t()`) share
their base's storage, so memory is counted by storage, never by tensor: two tensors with the
same storage key are the same bytes. A tensor without an ordinary storage (meta, sparse,
wrapper subclasses, an empty tensor) costs nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeGuard

import torch

#: (device, address of the storage's first byte): the identity of a block of memory
StorageKey = tuple[str, int]


@dataclass(frozen=True)
class Storage:
    """A block of tensor memory: where it is and how large it is."""

    key: StorageKey
    nbytes: int

    @property
    def device(self) -> str:
        return self.key[0]


def storage_of(tensor: Any) -> Storage | None:
    """The storage a tensor lives in (None when it has no ordinary one). Reads only."""
    try:
        if tensor.layout is not torch.strided or tensor.is_meta:
            return None
        storage = tensor.untyped_storage()
        address = storage.data_ptr()
        if not address:
            return None
        return Storage((str(tensor.device), address), int(storage.nbytes()))
    except Exception:  # noqa: BLE001 - wrapper subclasses, fake tensors, functorch levels: not ours to count
        return None


def own_bytes(tensor: Any) -> int:
    """The bytes the tensor itself addresses (a view of 1 element of a 1 GB storage: 4 bytes)."""
    try:
        return int(tensor.numel()) * int(tensor.element_size())
    except Exception:  # noqa: BLE001 - same as above
        return 0


_TENSOR_TYPES: dict[type, bool] = {}


def is_tensor(value: Any) -> TypeGuard[torch.Tensor]:
    """`isinstance(value, torch.Tensor)` by the value's type alone: never calls a `__class__`
    property (lazy modules warn when theirs is read) and costs a dict lookup."""
    kind = type(value)
    known = _TENSOR_TYPES.get(kind)
    if known is None:
        known = _TENSOR_TYPES[kind] = issubclass(kind, torch.Tensor)
    return known
