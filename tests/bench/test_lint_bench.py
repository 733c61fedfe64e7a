"""The lint bench's check mode (`bench/lint_bench.py --check`, run by .ci/run): its generated
corpus is the same on every run, is correct training code (lint finds nothing in it), and the
check fails when lint is slower than the target and passes when it is not."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

from torchdoctor.core import registry
from torchdoctor.lint.engine import Engine
from torchdoctor.lint.source import Source

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load():
    spec = importlib.util.spec_from_file_location("lint_bench", BENCH / "lint_bench.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("lint_bench", module)
    spec.loader.exec_module(module)
    return module


bench = _load()


def test_the_generated_corpus_is_the_same_every_time(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    a, b = bench.generated_corpus(first, 6), bench.generated_corpus(second, 6)
    assert [p.name for p in a] == [p.name for p in b]
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    assert len({p.read_text() for p in a}) == 6  # files differ from one another


def test_the_generated_corpus_is_clean_training_code(tmp_path: Path) -> None:
    engine = Engine({rule.code for rule in registry.all_rules()})
    for path in bench.generated_corpus(tmp_path, 6):
        text = path.read_text()
        tree = ast.parse(text)
        assert any(isinstance(n, ast.Attribute) and n.attr == "backward" for n in ast.walk(tree))
        result = engine.lint(Source(str(path), text), tree)
        assert result.findings == [] and result.errors == []


def test_the_check_fails_above_the_target_and_passes_below(tmp_path: Path, capsys) -> None:
    assert bench.check(target=0.01, repeat=1, files=3) == 1
    assert "too slow" in capsys.readouterr().out
    assert bench.check(target=1000.0, repeat=1, files=3) == 0
    assert ": ok" in capsys.readouterr().out
