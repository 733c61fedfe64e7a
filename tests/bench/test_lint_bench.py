"""The lint bench's check mode (`bench/lint_bench.py --check`, run by .ci/run): its generated
corpus is the same on every run, is correct training code (lint finds nothing in it), and the
check fails when lint is slower than the target and passes when it is not."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.bench.bench_module import load

from torchdoctor.core import registry
from torchdoctor.linter.engine import Engine
from torchdoctor.linter.source import Source

BENCH = Path(__file__).resolve().parents[2] / "bench"


bench = load("lint_bench", "lint_bench.py")


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
