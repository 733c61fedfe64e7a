"""Crash to kernel: the aten op a crash was raised in, the dispatch key whose kernel failed, and
the backends of this install that do have a kernel for the op.

The op comes from the message when PyTorch names it ("Could not run 'aten::view' with
arguments from the 'SparseCPU' backend", "... in method wrapper_CUDA_addmm"), otherwise from
the call that was running in the innermost frame: Python records the position of the
expression that raised, so `torch.linalg.eigh(x)` is read back from the source and resolved
to the builtin it calls, whose name is the aten op's. The backends come from the installed
dispatcher (introspect/dispatcher.py), never from a list here.

Like every explainer this never imports torch: it only reads it when the program did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchdoctor.observe.crash.describe import describe, dtype_name, tensors_near, torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.observe.crash.ops import COULD_NOT_RUN, NOT_IMPLEMENTED, OpSite, op_at
from torchdoctor.rules.device.op_missing_for_backend import RULE as MISSING
from torchdoctor.rules.dtype.dtype_not_supported_by_kernel import RULE as UNSUPPORTED

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

#: what to do with a tensor of a backend an op has no kernel for
#: the dispatch key's family -> the variant of TD431 whose hint says how to convert such a tensor
FAMILIES = {"Sparse": "sparse", "SparseCsr": "sparse", "Quantized": "quantized", "Mkldnn": "mkldnn",
            "NestedTensor": "nested-tensor", "Meta": "meta", "MPS": "mps"}


def op_missing_for_backend(crash: Crash, session: Holdings | None) -> Explanation | None:
    match = COULD_NOT_RUN.search(crash.message)
    if match is None or crash.exc_type != "NotImplementedError" or torch_module() is None:
        return None
    site = OpSite(match["op"], match["key"])
    backends = site.backends()
    family = next((family for family in sorted(FAMILIES, key=len, reverse=True) if site.key and site.key.startswith(family)), None)
    tensor = _tensor_of_backend(crash, session, site.key or "")
    return Explanation(MISSING, {
        "op": site.op, "key": site.key, "tensor": f" ({tensor})" if tensor else "",
        "backends": backends or "no other backend",
    }, variant=FAMILIES[family] if family else None, evidence=site.evidence())


def dtype_not_supported(crash: Crash, session: Holdings | None) -> Explanation | None:
    label = NOT_IMPLEMENTED.search(crash.message)
    if label is None or torch_module() is None:
        return None
    site = op_at(crash)
    dtype = dtype_name(label["dtype"].replace("c10::", ""))
    kernel = label["kernel"]
    tensor = _tensor_of_dtype(crash, session, dtype)
    op = site.op if site is not None else None
    key = site.key if site is not None else None
    floating = dtype in ("float16", "bfloat16")
    variant = ("half-on-cpu" if key == "CPU" else "half") if floating else "not-floating"
    where = f"{op}'s {key} kernel" if op and key else f"{op}'s kernel" if op else "the kernel"
    backends = site.backends() if site is not None else ""
    return Explanation(UNSUPPORTED, {
        "where": where, "kernel": kernel, "dtype": dtype, "tensor": f": {tensor} is {dtype}" if tensor else "",
        "backends": f" ({op} has kernels for {backends} in this torch)" if op and backends else "",
    }, variant=variant, evidence=site.evidence() if site is not None else {"kernel": kernel})


def _tensor_of_backend(crash: Crash, session: Holdings | None, key: str) -> str | None:
    torch = torch_module()
    for name, tensor, _frame in tensors_near(crash):
        try:
            if key in str(torch._C._dispatch_keys(tensor)):
                return describe(name, tensor, crash, session)
        except RuntimeError:
            continue
    return None


def _tensor_of_dtype(crash: Crash, session: Holdings | None, dtype: str) -> str | None:
    for name, tensor, _frame in tensors_near(crash):
        if str(getattr(tensor, "dtype", "")).replace("torch.", "") == dtype:
            return describe(name, tensor, crash, session)
    return None


#: where these explainers are tried: lower first (core/plugins.py)
ORDER = 80
EXPLAINERS = (op_missing_for_backend, dtype_not_supported)
