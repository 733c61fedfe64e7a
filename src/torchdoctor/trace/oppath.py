"""One aten op, the whole path: schema, native_functions.yaml entry, kernels of this install.

`path_of("aten::add.Tensor")` joins what the installed torch knows about an op: its schema
(the dispatcher's), its entry in the packaged native_functions.yaml (with the entry of its
`structured_delegate`, where the computation really is), the line of its backward formula in
derivatives.yaml, every kernel registered for it with the file:line that registered it, the
computed dispatch table for the common backends, and links to the sources at the installed
version. Names come from the install, never from this file: a kernel function is named only
where the yaml names it.

torch is imported when a path is built (the runner of `torchdoctor trace --op` does; the
traced process has it already).
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass, field
from typing import Any

from torchdoctor.core.errors import UsageError
from torchdoctor.introspect import dispatcher as dispatch
from torchdoctor.trace import native
from torchdoctor.trace.sources import DERIVATIVES_PATH, Version, source

#: runtime keys shown in the computed table: the backends users meet, autograd and autocast
TABLE_KEYS = ("CPU", "CUDA", "MPS", "XPU", "Meta", "AutogradCPU", "AutogradCUDA", "AutocastCPU", "AutocastCUDA")
#: alias keys whose kernel serves a backend that has none of its own
COMPOSITE = ("CompositeExplicitAutogradNonFunctional", "CompositeExplicitAutograd", "CompositeImplicitAutograd")


@dataclass(frozen=True)
class YamlPlace:
    op: str
    line: int
    url: str
    text: str
    fields: dict[str, Any]


@dataclass
class OpPath:
    op: str
    schema: str
    version: Version
    entry: YamlPlace | None = None
    delegate: YamlPlace | None = None
    derivative: dict[str, Any] | None = None
    registrations: list[dict[str, Any]] = field(default_factory=list)
    table: list[dict[str, Any]] = field(default_factory=list)
    served: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        def place(found: YamlPlace | None) -> dict[str, Any] | None:
            if found is None:
                return None
            return {"op": found.op, "file": native.REPOSITORY_PATH, "line": found.line, "url": found.url,
                    "text": found.text, "fields": found.fields}

        return {
            "op": self.op,
            "schema": self.schema,
            "torch": {"version": self.version.version, "commit": self.version.commit, "ref": self.version.ref},
            "native_functions": place(self.entry),
            "structured_delegate": place(self.delegate),
            "derivative": self.derivative,
            "registrations": self.registrations,
            "table": self.table,
            "served": self.served,
            "notes": self.notes,
        }


def _torch() -> Any:
    import torch

    return torch


def installed_version() -> Version:
    torch = _torch()
    return Version(version=str(torch.__version__), commit=getattr(torch.version, "git_version", None))


@functools.lru_cache(maxsize=1)
def all_ops() -> tuple[str, ...]:
    return tuple(sorted(_torch()._C._dispatch_get_all_op_names()))


def resolve(name: str) -> str:
    """`add.Tensor`, `aten::add.Tensor`, `torch.ops.aten.mm.default` -> the dispatcher's name;
    a UsageError naming the closest ops when there is none, or the overloads when it is ambiguous."""
    text = name.strip()
    if text.startswith("torch.ops."):
        parts = text[len("torch.ops."):].split(".")
        text = f"{parts[0]}::{'.'.join(p for p in parts[1:] if p != 'default')}"
    if "::" not in text:
        text = f"aten::{text}"
    ops = all_ops()
    known = set(ops)
    if text in known:
        return text
    overloads = [op for op in ops if op.startswith(text + ".")]
    if overloads:
        raise UsageError(f"{text} has {len(overloads)} overloads, name one: {', '.join(overloads[:8])}")
    close = difflib.get_close_matches(text, ops, n=5, cutoff=0.6)
    base = text.split(".", 1)[0]
    close += [op for op in difflib.get_close_matches(base, ops, n=5, cutoff=0.75) if op not in close]
    hint = f": did you mean {', '.join(close[:5])}?" if close else " (see `torch._C._dispatch_get_all_op_names()`)"
    raise UsageError(f"no op named {text} in this torch ({_torch().__version__}){hint}")


def path_of(name: str, *, keys: set[str] | None = None) -> OpPath:
    """The op's whole path; with `keys` (a call's dispatch key set), the kernels that served it."""
    op = resolve(name)
    torch = _torch()
    version = installed_version()
    base, _, overload = op.partition(".")
    schema = str(torch._C._dispatch_find_schema_or_throw(base, overload).schema())
    path = OpPath(op=op, schema=schema, version=version)
    functions = native.installed()
    entry = functions.get(op) if functions is not None and op.startswith("aten::") else None
    delegate = None
    if entry is not None and functions is not None:
        path.entry = _place(functions, entry, version)
        if entry.structured_delegate:
            delegate = functions.get(entry.structured_delegate)
            if delegate is not None:
                path.delegate = _place(functions, delegate, version)
    elif functions is None:
        path.notes.append("native_functions.yaml is not in this install (torchgen/packaged is missing)")
    else:
        path.notes.append(f"{op} has no entry in native_functions.yaml (it is registered by C++ or Python code, not generated)")
    path.derivative = _derivative(op, version)
    rows = dispatch.table(op)
    kernels = {**(delegate.dispatch if delegate else {}), **(entry.dispatch if entry else {})}
    for registration in dispatch.registrations(op):
        found = source(registration.file, registration.line)
        path.registrations.append({
            "key": registration.key + ("[alias]" if registration.alias else ""),
            "where": registration.where,
            "path": found.where if found.path else None,
            "generated": found.generated,
            "inactive": registration.inactive,
            "kernel": kernels.get(registration.key),
            "url": _url(found, path, version, registration.key, entry),
        })
    for key in TABLE_KEYS:
        row = rows.get(key)
        if row is None:
            continue
        found = source(row.file, row.line)
        path.table.append({"key": key, "kind": "fallthrough" if row.fallthrough else row.kind, "where": row.where,
                           "path": found.where if found.path else None, "url": _url(found, path, version, key, entry),
                           "kernel": _kernel_for(key, row, kernels)})
    cuda = next((r for r in path.table if r["key"] == "CUDA"), None)
    cpu = next((r for r in path.table if r["key"] == "CPU"), None)
    if (cuda is not None and cpu is not None and cpu["kind"] == "kernel" and cuda["kind"] != "kernel"
            and getattr(torch.version, "cuda", None) is None):
        path.notes.append(
            f"this torch ({version.version}) is built without CUDA: no CUDA kernel of {op} is compiled in, "
            f"and the CUDA row holds the {cuda['kind']}"
        )
    if keys is not None:
        path.served = [{"key": s.key, "kind": s.kind, "where": s.where, "path": source(*_split(s.where)).path}
                       for s in dispatch.served_by(op, keys, rows)]
    if entry is not None and "ufunc_inner_loop" in (delegate or entry).fields:
        loops = (delegate or entry).fields["ufunc_inner_loop"]
        names = sorted({str(v).split()[0] for v in loops.values()}) if isinstance(loops, dict) else []
        headers = [header for header in (_ufunc_header(name) for name in names) if header]
        where = f": {', '.join(version.url(h) for h in headers)}" if headers else ""
        path.notes.append(
            f"the CPU and CUDA kernels of aten::{(delegate or entry).name} are generated from its ufunc_inner_loop "
            f"({', '.join(names)}){where}"
        )
    return path


def _ufunc_header(name: str) -> str | None:
    """The repository header a ufunc kernel is generated from, as the installed code generator's
    template includes it (`#include <ATen/native/ufunc/${name}.h>`)."""
    yaml_path = native.installed_path()
    template = yaml_path.parents[1] / "templates" / "UfuncCPUKernel.cpp" if yaml_path else None
    if template is None or not template.is_file():
        return None
    match = re.search(r"#include <(ATen/native/ufunc/)\$\{name\}\.h>", template.read_text(encoding="utf-8"))
    return f"aten/src/{match[1]}{name}.h" if match else None


def _split(where: str) -> tuple[str, int | None]:
    file, _, line = where.rpartition(":")
    return (file, int(line)) if line.isdigit() else (where, None)


def _place(functions: native.NativeFunctions, entry: native.Entry, version: Version) -> YamlPlace:
    return YamlPlace(op=f"aten::{entry.name}", line=entry.line, url=version.url(native.REPOSITORY_PATH, entry.line),
                     text=functions.text(entry), fields=entry.fields)


def _derivative(op: str, version: Version) -> dict[str, Any] | None:
    """The line of the op's backward formula in the packaged derivatives.yaml."""
    derivatives = _derivatives()
    if not op.startswith("aten::") or derivatives is None:
        return None
    name = op.removeprefix("aten::")
    line = derivatives.get(name)
    if line is None:
        return None
    return {"file": DERIVATIVES_PATH, "line": line, "url": version.url(DERIVATIVES_PATH, line)}


@functools.lru_cache(maxsize=1)
def _derivatives() -> dict[str, int] | None:
    yaml_path = native.installed_path()
    if yaml_path is None:
        return None
    path = yaml_path.parents[2] / "autograd" / "derivatives.yaml"
    if not path.is_file():
        return None
    # only each entry's name and line: its formulas use more YAML than native.parse reads
    return {entry.name: entry.line for entry in native.parse(path.read_text(encoding="utf-8"), head="name")}


def _url(found: Any, path: OpPath, version: Version, key: str, entry: native.Entry | None) -> str | None:
    """The source line in the repository; for a file generated at build time, the yaml entry
    it was generated from (the backward formula for the generated autograd kernels; the
    structured delegate's entry for a backend kernel the op's own entry does not name)."""
    if found.path is None:
        return None
    if not found.generated:
        return version.url(found.path, found.line)
    if "autograd/generated/VariableType" in found.path and path.derivative is not None:
        return str(path.derivative["url"])
    own = entry is not None and key in entry.dispatch
    place = path.delegate if path.delegate is not None and not own else path.entry
    return place.url if place is not None else None


def _kernel_for(key: str, row: dispatch.Row, kernels: dict[str, str]) -> str | None:
    """The kernel function the yaml names for a runtime key: the key's own kernel when the
    row holds a kernel registered for that key, else the composite alias's whose kernel fills it."""
    if row.kind == "kernel" and not row.fallthrough:
        return kernels.get(key)
    if row.kind in ("default backend kernel", "math kernel"):
        for alias in COMPOSITE:
            if alias in kernels and f"Register{alias}_" in row.file:
                return kernels[alias]
    return None
