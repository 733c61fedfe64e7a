"""What the dispatcher of *this* install holds for an op, and which kernels serve a call.

Two dumps of the dispatcher, read as text (the only form torch exposes them in):

- `torch._C._dispatch_dump(op)`: every registration, with its dispatch key (or alias key such
  as `CompositeImplicitAutograd[alias]`) and the file:line of the C++ (or Python) code that
  registered it;
- `torch._C._dispatch_dump_table(op)`: the computed table, one runtime key per row, with the
  kernel that fills it and its kind (`kernel`, `autograd kernel`, `math kernel` for
  CompositeImplicitAutograd, `default backend kernel` for CompositeExplicitAutograd,
  `backend fallback`, or a `fallthrough`).

`served_by` walks a call's dispatch key set in priority order the way the dispatcher does:
the highest key whose entry is not a fallthrough runs; an autocast, autograd,
ADInplaceOrView or BackendSelect kernel handles its concern and redispatches to the keys
below it; any other kernel (a backend's, a composite one, a fallback) is where the call ends.
The priority order and every entry come from the installed torch, so nothing here names a
kernel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: kinds of kernels that do their part and pass the call on to the keys below them
REDISPATCHING_KEYS = ("Autocast", "Autograd", "ADInplaceOrView", "BackendSelect")

_REGISTRATION = re.compile(
    r"^(?P<key>\w+)(?P<alias>\[alias\])?(?P<inactive> \(inactive\))?: (?P<fallthrough>fallthrough )?"
    r"registered at (?P<where>.+?)(?: :: (?P<signature>.*?))?(?: \[ (?P<flags>[\w ]+) \])?$"
)
_ROW = re.compile(r"^(?P<key>\w+): (?P<fallthrough>fallthrough )?registered at (?P<where>.+?) \[(?P<kind>[\w ]+)\]$")


@dataclass(frozen=True)
class Registration:
    """One kernel registered for an op: its key, where, and whether it is an alias key's."""

    key: str
    file: str
    line: int | None
    alias: bool = False
    inactive: bool = False
    fallthrough: bool = False

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line is not None else self.file


@dataclass(frozen=True)
class Row:
    """One runtime key of the computed dispatch table."""

    key: str
    file: str
    line: int | None
    kind: str  # "kernel", "autograd kernel", "math kernel", "default backend kernel", "backend fallback", ...
    fallthrough: bool = False

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line is not None else self.file


def _split_where(where: str) -> tuple[str, int | None]:
    path, _, line = where.rpartition(":")
    return (path, int(line)) if path and line.isdigit() else (where, None)


def parse_registrations(dump: str) -> list[Registration]:
    found = []
    for text in dump.splitlines():
        match = _REGISTRATION.match(text.strip())
        if match is None or match["key"] in ("name", "schema", "debug"):
            continue
        file, line = _split_where(match["where"])
        flags = (match["flags"] or "").split()
        found.append(Registration(
            key=match["key"], file=file, line=line, alias=bool(match["alias"]), inactive=bool(match["inactive"]),
            fallthrough=bool(match["fallthrough"]) or "fallthrough" in flags,
        ))
    return found


def parse_table(dump: str) -> dict[str, Row]:
    rows = {}
    for text in dump.splitlines():
        match = _ROW.match(text.strip())
        if match is None:
            continue
        file, line = _split_where(match["where"])
        rows[match["key"]] = Row(match["key"], file, line, match["kind"].strip(), fallthrough=bool(match["fallthrough"]))
    return rows


def torch_module() -> Any:
    import torch

    return torch


def backend_keys() -> frozenset[str]:
    """The backend dispatch keys of this torch (CPU, CUDA, MPS, SparseCPU, QuantizedCPU,
    NestedTensorCPU, Meta, ...): those below BackendSelect in the dispatcher's order."""
    torch = torch_module()
    below = keyset_names(torch._C._dispatch_keyset_full_after(torch._C.DispatchKey.BackendSelect))
    return frozenset(below - {"PythonDispatcher", "CustomRNGKeyId"})


def backends_with_kernel(op: str) -> tuple[list[str], bool]:
    """(the backends that have a kernel of their own for `op` in this install, whether every
    backend runs it through a composite kernel, i.e. as other ops)."""
    rows = table(op)
    backends = backend_keys()
    own = [key for key, row in rows.items() if key in backends and row.kind == "kernel" and not row.fallthrough]
    composite = any(row.kind in ("math kernel", "default backend kernel") for key, row in rows.items() if key in backends)
    return own, composite


def registrations(op: str) -> list[Registration]:
    return parse_registrations(torch_module()._C._dispatch_dump(op))


def table(op: str) -> dict[str, Row]:
    return parse_table(torch_module()._C._dispatch_dump_table(op))


def exists(op: str) -> bool:
    return bool(torch_module()._C._dispatch_dump(op))


@dataclass(frozen=True)
class Served:
    """One step of a call through the dispatcher: the key, the kernel's kind, where it is."""

    key: str
    kind: str
    where: str

    @property
    def ends(self) -> bool:
        return not self.key.startswith(REDISPATCHING_KEYS)


def priority_order(keys: set[str]) -> list[str]:
    """The keys, highest priority first, as the installed dispatcher orders them."""
    torch = torch_module()
    parsed = [key for key in (torch._C._parse_dispatch_key(name) for name in sorted(keys)) if key is not None]
    if not parsed:
        return []
    keyset = torch._C.DispatchKeySet(parsed[0])
    for key in parsed[1:]:
        keyset = keyset.add(key)
    ordered: list[str] = []
    while True:
        top = keyset.highestPriorityTypeId()
        name = str(top).split(".")[-1]
        if name == "Undefined":
            return ordered
        ordered.append(name)
        keyset = keyset.remove(top)


def served_by(op: str, keys: set[str], rows: dict[str, Row] | None = None) -> list[Served]:
    """The kernels a call of `op` with this dispatch key set runs through, outermost first."""
    rows = rows if rows is not None else table(op)
    chain: list[Served] = []
    for key in priority_order(keys):
        row = rows.get(key)
        if row is None or row.fallthrough:
            continue
        step = Served(key, row.kind, row.where)
        chain.append(step)
        if step.ends or row.kind == "math kernel":
            break
    return chain


def call_keys(tensor_keys: set[str], include: set[str], exclude: set[str]) -> set[str]:
    """The key set the dispatcher computes for a call: the tensors' keys and the thread's
    included keys, less the thread's excluded ones (autocast off = its key excluded)."""
    return (tensor_keys | include) - exclude


def keyset_names(keyset: Any) -> set[str]:
    """`DispatchKeySet(CPU, AutogradCPU)` -> {"CPU", "AutogradCPU"}."""
    text = str(keyset)
    inner = text[text.find("(") + 1: text.rfind(")")]
    return {name.strip() for name in inner.split(",") if name.strip()}


def overload_for(base: str, dtypes: list[str], ops: tuple[str, ...]) -> str | None:
    """The overload of `aten::add` a profiled call used, from the kinds of its inputs (the
    profiler records `float` for a tensor, `Scalar` for a number, in schema order): the first
    overload whose non-out schema has as many arguments, tensors where tensors were passed."""
    torch = torch_module()
    candidates = [op for op in ops if op == base or op.startswith(base + ".")]
    best = None
    for op in candidates:
        name, _, overload = op.partition(".")
        if overload.endswith("out"):
            continue
        arguments = torch._C._dispatch_find_schema_or_throw(name, overload).schema().arguments
        if len(arguments) != len(dtypes):
            continue
        tensors = all(("Tensor" in str(a.type)) == (d not in ("Scalar", "ScalarList", "") or "Tensor" in str(a.type) and d == "")
                      for a, d in zip(arguments, dtypes))
        if tensors:
            return op
        best = best or op
    return best or (candidates[0] if len(candidates) == 1 else None)
