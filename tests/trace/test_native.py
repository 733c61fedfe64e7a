"""native_functions.yaml as torchdoctor reads it is the file PyYAML reads, entry for entry."""

from __future__ import annotations

import pytest

from torchdoctor.trace import native

yaml = pytest.importorskip("yaml")
PATH = native.installed_path()
pytestmark = pytest.mark.skipif(PATH is None, reason="this torch ships no native_functions.yaml")


def load_with_pyyaml(path):  # type: ignore[no-untyped-def]
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)


def test_every_entry_matches_pyyaml() -> None:
    assert PATH is not None
    expected = load_with_pyyaml(PATH)
    entries = native.parse(PATH.read_text(encoding="utf-8"))
    assert len(entries) == len(expected) > 2000
    for entry, data in zip(entries, expected):
        assert {"func": entry.schema, **entry.fields} == data, entry.name


def test_entries_know_their_lines_and_text() -> None:
    assert PATH is not None
    lines = PATH.read_text(encoding="utf-8").splitlines()
    functions = native.load(PATH)
    for name in ("add.Tensor", "mm", "linear", "_log_softmax", "native_layer_norm"):
        entry = functions.get(f"aten::{name}")
        assert entry is not None and lines[entry.line - 1] == f"- func: {entry.schema}"
        assert functions.text(entry).splitlines()[0] == lines[entry.line - 1]
        assert functions.text(entry).splitlines()[-1].strip()  # the entry ends on a line of its own, not a blank


def test_derivatives_names_and_lines_match_pyyaml() -> None:
    """derivatives.yaml uses more YAML than native.parse reads: only each entry's name and line are used."""
    assert PATH is not None
    path = PATH.parents[2] / "autograd" / "derivatives.yaml"
    expected = load_with_pyyaml(path)
    entries = native.parse(path.read_text(encoding="utf-8"), head="name")
    assert [e.schema for e in entries] == [d["name"] for d in expected]
    lines = path.read_text(encoding="utf-8").splitlines()
    assert all(lines[e.line - 1].startswith("- name:") and lines[e.line - 1].endswith(e.schema) for e in entries)


def test_dispatch_keys_split_on_commas() -> None:
    entry = native.parse("- func: f(Tensor x) -> Tensor\n  dispatch:\n    CPU, CUDA: f_kernel  # both\n    Meta: f_meta\n")[0]
    assert entry.dispatch == {"CPU": "f_kernel", "CUDA": "f_kernel", "Meta": "f_meta"}
