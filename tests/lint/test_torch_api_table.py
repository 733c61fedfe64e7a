"""TD574's table of torch names and keywords (linter/data/torch_api.json) against the installed torch:
what lint takes for missing must be missing here too, and the facts its messages state are seen here."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest
import torch

from torchdoctor.dev import torch_api
from torchdoctor.linter.checks import torch_name_missing


def test_the_table_holds_every_name_and_keyword_of_the_installed_torch() -> None:
    table = torch_name_missing.api_table()
    assert table is not None, f"torch {torch.__version__} is not in the table: run `python -m torchdoctor.dev torch-api`"
    versions, modules = torch_api.read_installed()
    assert modules.keys() <= table.keys()
    for name, read in modules.items():
        names, signatures = table[name]
        assert set(read["names"]) <= names, name
        for callee, accepted in read["signatures"].items():
            if accepted is None:
                assert signatures[callee] is None, f"{name}.{callee} takes **kwargs here"
            elif signatures.get(callee) is not None:
                assert set(accepted) <= set(signatures[callee]), f"{name}.{callee}"


def test_the_table_judges_only_its_own_torch_releases(monkeypatch: pytest.MonkeyPatch) -> None:
    for version, judged in (("2.13.0", True), ("2.14.1+cu130", True), ("2.99.0", False), ("1.13.1", False)):
        monkeypatch.setattr(torch_name_missing.importlib.metadata, "version", lambda _name, v=version: v)
        torch_name_missing.api_table.cache_clear()
        assert (torch_name_missing.api_table() is not None) is judged, version
    torch_name_missing.api_table.cache_clear()


def test_a_merge_keeps_a_name_any_release_has_and_a_keyword_any_release_takes() -> None:
    old = {"versions": {"torch": ["2.13.0"]},
           "modules": {"torch.nn": {"names": ["Linear", "Old"], "signatures": {"Linear": ["a"], "F": ["x"]}}}}
    merged = torch_api.merge(old, {"torch": "2.14.1"}, {"torch.nn": {"names": ["Linear", "New"],
                                                                    "signatures": {"Linear": ["a", "b"], "F": None}}})
    assert merged["versions"]["torch"] == ["2.13.0", "2.14.1"]
    entry = merged["modules"]["torch.nn"]
    assert entry["names"] == ["Linear", "New", "Old"]
    assert entry["signatures"] == {"F": None, "Linear": ["a", "b"]}


def test_the_failures_td574_describes_are_real() -> None:
    with pytest.raises(RuntimeError, match="stft requires the return_complex parameter be given for real inputs"):
        torch.stft(torch.randn(800), 256, window=torch.hann_window(256))
    assert torch.stft(torch.randn(800, dtype=torch.complex64), 256, window=torch.hann_window(256)).is_complex()
    with pytest.raises(TypeError, match="unexpected keyword argument 'stddev'"):
        torch.nn.init.normal_(torch.empty(3), stddev=0.01)
    with pytest.raises(AttributeError):
        torch.nn.Layernorm  # noqa: B018
    assert not hasattr(importlib.import_module("torch.functional"), "softplus")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for alias in torch_name_missing.NUMPY_REMOVED:
            assert not hasattr(np, alias), alias
        assert hasattr(np, "bool") and hasattr(np, "long")  # back in NumPy 2: not flagged
