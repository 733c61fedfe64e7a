"""One op's whole path, checked against the installed yaml and dispatcher (no kernel name is
written here: every expected value is read from the install by other means)."""

from __future__ import annotations

import re

import pytest
import torch

from torchdoctor.core.errors import UsageError
from torchdoctor.introspect import dispatcher as dispatch
from torchdoctor.trace import native, oppath

yaml = pytest.importorskip("yaml")
OPS = ("aten::add.Tensor", "aten::mm", "aten::addmm", "aten::linear", "aten::relu", "aten::_log_softmax",
       "aten::nll_loss_forward", "aten::convolution", "aten::native_layer_norm", "aten::sum.dim_IntList",
       "aten::view", "aten::copy_", "aten::cat", "aten::_local_scalar_dense", "aten::embedding")


def yaml_entries() -> dict[str, dict]:  # type: ignore[type-arg]
    path = native.installed_path()
    assert path is not None
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return {d["func"].split("(", 1)[0]: d for d in data}


ENTRIES = yaml_entries()


def dispatch_of(entry: dict) -> dict[str, str]:  # type: ignore[type-arg]
    return {k.strip(): v for keys, v in (entry.get("dispatch") or {}).items() for k in keys.split(",")}


@pytest.mark.parametrize("op", OPS)
def test_path_matches_the_installed_yaml_and_dispatcher(op: str) -> None:
    path = oppath.path_of(op)
    name = op.removeprefix("aten::")
    base, _, overload = op.partition(".")
    assert path.schema == str(torch._C._dispatch_find_schema_or_throw(base, overload).schema())
    # the yaml entry: its line holds the entry's `func`, its fields are PyYAML's
    yaml_path = native.installed_path()
    assert yaml_path is not None and path.entry is not None
    lines = yaml_path.read_text(encoding="utf-8").splitlines()
    assert lines[path.entry.line - 1] == f"- func: {ENTRIES[name]['func']}"
    assert path.entry.fields == {k: v for k, v in ENTRIES[name].items() if k != "func"}
    delegate = ENTRIES[name].get("structured_delegate")
    assert (path.delegate.op if path.delegate else None) == (f"aten::{delegate}" if delegate else None)
    # every registration of the dispatcher's dump, with its file:line, and only those
    dump = torch._C._dispatch_dump(op)
    registered = [line for line in dump.splitlines() if " registered at " in line and not line.startswith("debug:")]
    assert len(path.registrations) == len(registered)
    for registration, line in zip(path.registrations, registered):
        assert line.startswith(registration["key"].replace("[alias]", "")) and registration["where"] in line
        kernels = {**dispatch_of(ENTRIES.get(delegate, {}) if delegate else {}), **dispatch_of(ENTRIES[name])}
        assert registration["kernel"] == kernels.get(registration["key"].replace("[alias]", ""))
    # the computed table rows shown are the dispatcher's own
    table = torch._C._dispatch_dump_table(op)
    for row in path.table:
        found = next(line for line in table.splitlines() if line.startswith(row["key"] + ":"))
        assert row["where"] in found
        assert (row["kind"] == "fallthrough") == ("fallthrough" in found)
        if row["kind"] != "fallthrough":
            assert found.endswith(f"[{row['kind']}]")


def test_add_the_seed_example_comes_out_truthfully() -> None:
    """The seed article says `add` dispatches to `add_cpu` / `add_cuda`; the install says otherwise."""
    path = oppath.path_of("aten::add.Tensor").to_dict()
    assert path["structured_delegate"]["op"] == "aten::add.out"
    names = {r["kernel"] for r in path["registrations"]} | {r["kernel"] for r in path["table"]}
    text = str(path)
    assert "add_cpu" not in names and "add_cuda" not in names and "add_cpu" not in text and "add_cuda" not in text
    cpu = next(r for r in path["table"] if r["key"] == "CPU")
    assert cpu["kind"] == "kernel" and cpu["where"] in torch._C._dispatch_dump("aten::add.Tensor")
    assert "ufunc_inner_loop" in path["structured_delegate"]["text"]
    assert any("ufunc_inner_loop" in note for note in path["notes"])
    if torch.version.cuda is None:  # a CPU build: no CUDA kernel is compiled in, and it says so
        assert next(r for r in path["table"] if r["key"] == "CUDA")["kind"] != "kernel"
        assert any("built without CUDA" in note for note in path["notes"])


def test_links_name_the_installed_version() -> None:
    path = oppath.path_of("aten::mm").to_dict()
    ref = path["torch"]["ref"]
    assert ref in (f"v{torch.__version__.split('+')[0]}", torch.version.git_version)
    assert path["native_functions"]["url"].endswith(f"/blob/{ref}/aten/src/ATen/native/native_functions.yaml#L{path['native_functions']['line']}")
    for registration in path["registrations"]:
        if registration["url"] and not registration["generated"]:  # a real source file at its line
            where = registration["where"]
            assert registration["url"].endswith(f"#L{where.rsplit(':', 1)[1]}")


@pytest.mark.parametrize(("op", "autocast"), [("aten::mm", False), ("aten::mm", True), ("aten::linear", False), ("aten::view", False)])
def test_served_by_walks_the_key_set_in_priority_order(op: str, autocast: bool) -> None:
    x = torch.randn(2, 2, requires_grad=True)
    keys = dispatch.keyset_names(torch._C._dispatch_keys(x))
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        include = dispatch.keyset_names(torch._C._dispatch_tls_local_include_set())
        exclude = dispatch.keyset_names(torch._C._dispatch_tls_local_exclude_set())
    chain = dispatch.served_by(op, dispatch.call_keys(keys, include, exclude))
    rows = dispatch.table(op)
    assert chain and all(rows[step.key].where == step.where and rows[step.key].kind == step.kind for step in chain)
    assert (chain[0].key == "AutocastCPU") == (autocast and not rows["AutocastCPU"].fallthrough)
    last = chain[-1]
    assert last.ends or last.kind == "math kernel"  # a backend's (or composite) kernel ends the call
    assert all(not step.ends for step in chain[:-1])


def test_unknown_and_ambiguous_names() -> None:
    with pytest.raises(UsageError, match=re.escape("aten::add.Tensor")):
        oppath.resolve("aten::ad.Tensor")
    with pytest.raises(UsageError, match="overloads"):
        oppath.resolve("add")
    assert oppath.resolve("mm") == oppath.resolve("torch.ops.aten.mm.default") == "aten::mm"
