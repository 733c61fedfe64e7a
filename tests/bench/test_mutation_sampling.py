"""The mutation bench's sample and scores, without a corpus: a stratified sample keeps at most K
mutants of each operator and is the same for the same seed; the weighted totals count each
operator by its share of all mutants; a run is skipped only when lint already locates the bug."""

from __future__ import annotations

from pathlib import Path

from tests.bench.bench_module import load

BENCH = Path(__file__).resolve().parents[2] / "bench"


bench = load("mutation_bench", "mutation_bench.py")


def _mutation(operator: str, line: int):
    return bench.Mutation(operator, (line,), "", "", "")


def _todo():
    program = bench.Program("p", ("r", "c"), "", "main.py")
    return [(program, "main.py", _mutation(op, i)) for i, op in enumerate(["a"] * 5 + ["b"] * 1 + ["c"] * 3)]


def test_stratified_sample_keeps_at_most_k_per_operator_in_plan_order():
    todo = _todo()
    sample = bench.stratified(todo, 2, seed=0)
    operators = [m.operator for _, _, m in sample]
    assert operators.count("a") == 2 and operators.count("b") == 1 and operators.count("c") == 2
    lines = [m.lines[0] for _, _, m in sample]
    assert lines == sorted(lines)
    assert sample == bench.stratified(todo, 2, seed=0)
    assert any(bench.stratified(todo, 2, seed=seed) != sample for seed in range(1, 10))
    assert bench.stratified(todo, 10, seed=0) == todo


def test_weighted_rate_counts_each_operator_by_its_share_of_all_mutants():
    # operator a: 2 sampled, 2 detected, 90 mutants in all; b: 2 sampled, 0 detected, 10 in all
    rows = {"a": [2, 2, 1], "b": [2, 0, 0]}
    population = {"a": 90, "b": 10}
    assert bench.weighted(rows, population, 1) == "90%"
    assert bench.weighted(rows, population, 2) == "45%"


def _finding(rule: str, category: str, line: int, severity: str = "warning") -> dict:
    return {"tool": "lint", "rule": rule, "category": category, "severity": severity, "file": "main.py",
            "line": line, "message": ""}


def test_score_needs_a_new_serious_finding_of_the_operators_category_near_the_line():
    def scored(findings, baseline=()):
        result = bench.Result("p", "drop_step", "main.py", [10], "", "", None, findings)
        bench.score(result, list(baseline))
        return result.detected, result.located

    assert scored([_finding("TD172", "optimizer", 11)]) == (True, True)
    assert scored([_finding("TD172", "optimizer", 30)]) == (True, False)
    assert scored([_finding("TD172", "optimizer", 10, "info")]) == (False, False)
    assert scored([_finding("TD999", "performance", 10)]) == (False, False)
    assert scored([_finding("TD172", "optimizer", 10)], [_finding("TD172", "optimizer", 10)]) == (False, False)
