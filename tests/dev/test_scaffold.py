"""`python -m torchdoctor.dev new-rule`: a copy of this checkout gets a rule, registered
detector stubs and two-sided tests; the flagged side's tests fail until the detectors are
written, the correct side's pass, and the rule is in the catalogue at once."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.core import codes, registry
from torchdoctor.core.finding import Category

ROOT = Path(__file__).resolve().parents[2]


def free_code(category: Category) -> str:
    found = codes.next_free(category, (rule.code for rule in registry.all_rules()))
    assert found is not None, f"the {category.value} block is full"
    return found


#: what the scaffold proposes for a new optimizer rule, and a free loss code
CODE = free_code(Category.OPTIMIZER)
LOSS_CODE = free_code(Category.LOSS)


def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for part in ("src", "tests", "docs"):
        shutil.copytree(ROOT / part, root / part, ignore=ignore)
    for file in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / file, root)
    return root


def python(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_lint_run_and_check_rule_is_scaffolded_with_failing_tests_for_the_flagged_side(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    made = python(root, "-m", "torchdoctor.dev", "new-rule", "--name", "widget-misused",
                  "--category", "optimizer", "--lint", "--run", "--check", "--root", str(root))
    assert made.returncode == 0, made.stderr
    block = codes.shown(codes.BLOCKS[Category.OPTIMIZER])
    assert made.stdout.splitlines()[0] == f"code {CODE}: the next free one of the optimizer block ({block})"
    written = {line.removeprefix("wrote ") for line in made.stdout.splitlines() if line.startswith("wrote ")}
    assert written == {
        os.path.join(*p.split("/")) for p in (
            "src/torchdoctor/rules/optimizer/widget_misused.py", "src/torchdoctor/linter/checks/widget_misused.py",
            "tests/lint/fixtures/widget_misused.py", "src/torchdoctor/observe/detectors/widget_misused.py",
            "tests/observe/detectors/test_widget_misused.py", "src/torchdoctor/health/checks/widget_misused.py",
            "tests/health/test_widget_misused.py")}  # found where they are: nothing registered by hand
    shown = python(root, "-m", "torchdoctor", "rule", CODE)
    assert shown.returncode == 0 and f"# widget-misused ({CODE})" in shown.stdout
    registered = python(root, "-c", "from torchdoctor.observe.detectors import all_detectors; from torchdoctor.health.runner import NAMES;"
                                    "print([d.__name__ for d in all_detectors()].count('WidgetMisused'), NAMES.count('widget_misused'))")
    assert registered.stdout.split() == ["1", "1"], registered.stderr
    tests = python(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", "--rootdir", str(root),
                   "tests/observe/detectors/test_widget_misused.py", "tests/health/test_widget_misused.py",
                   "tests/lint/test_fixtures.py", "-k", "widget")
    outcomes = {line.split(" ", 1)[0] + " " + line.split("::")[-1].split(" ")[0]
                for line in tests.stdout.splitlines() if line.startswith(("PASSED ", "FAILED "))}
    assert outcomes == {
        "FAILED test_the_bug_is_flagged", "PASSED test_similar_correct_code_is_not_flagged",
        "FAILED test_fixture_findings_are_exactly_the_marked_ones[widget_misused]",
        "PASSED test_pinned_words_are_in_the_message_of_the_marked_finding[widget_misused]",  # it pins none
    }, tests.stdout[-3000:]
    assert sum(line.startswith("FAILED ") for line in tests.stdout.splitlines()) == 3  # run and check alike

    # the work the scaffold leaves: a trivial bug (torch.ones in lint; a learning rate over 1 in run and check)
    write_trivial_detectors(root)
    generated = python(root, "-m", "torchdoctor.dev", "generate", "--root", str(root))
    assert set(generated.stdout.split()) == {"wrote", "docs/rules.md", "docs/lint.md", "docs/run.md", "docs/check.md", "README.md"}, generated.stderr
    assert f"| {CODE} | `widget-misused` | warning | | TODO: what lint sees" in (root / "docs" / "lint.md").read_text(encoding="utf-8")
    tests = python(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(root),
                   "tests/observe/detectors/test_widget_misused.py", "tests/health/test_widget_misused.py",
                   "tests/lint/test_fixtures.py", "tests/rules/test_docs.py", "tests/catalog", "tests/dev/test_generate.py",
                   "-k", f"widget or {CODE} or rules_md or derived_doc")
    assert tests.returncode == 0 and " passed" in tests.stdout, tests.stdout[-3000:]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} is not in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def write_trivial_detectors(root: Path) -> None:
    """What a contributor writes after the scaffold, reduced to a trivial bug, in each file it made."""
    src = root / "src" / "torchdoctor"
    edit(src / "rules" / "optimizer" / "widget_misused.py", "x = torch.zeros(3)  # TODO: a small file that", "x = torch.ones(3)  # a small file that")
    check = src / "linter" / "checks" / "widget_misused.py"
    edit(check, '{"TODO_callee"}', '{"ones"}')
    check.write_text(check.read_text(encoding="utf-8") + '    ctx.report(RULE, node, fields={"what": "torch.ones"})\n', encoding="utf-8")
    edit(root / "tests" / "lint" / "fixtures" / "widget_misused.py", "bad = torch.zeros(3)", "bad = torch.ones(3)")
    detector = src / "observe" / "detectors" / "widget_misused.py"
    detector.write_text(detector.read_text(encoding="utf-8") + (
        '        if event.index == 1 and event.optimizer.param_groups[0]["lr"] > 1:\n'
        '            self.ctx.report(RULE, fields={"what": "lr"})\n'), encoding="utf-8")
    edit(root / "tests" / "observe" / "detectors" / "test_widget_misused.py", "lr=0.1)", "lr=10.0 if buggy else 0.1)")
    health = src / "health" / "checks" / "widget_misused.py"
    edit(health, '    return Outcome(detail="TODO: what was confirmed")',
         '    if ctx.subject.optimizer is not None and ctx.subject.optimizer.param_groups[0]["lr"] > 1:\n'
         '        return Outcome([RULE.finding(fields={"what": "lr"})])\n'
         '    return Outcome(detail="the learning rate is at most 1")')
    edit(root / "tests" / "health" / "test_widget_misused.py", "CORRECT = BUGGY  # TODO: the similar correct factory",
         'CORRECT = BUGGY.replace("lr=0.1", "lr=0.1")\nBUGGY = BUGGY.replace("lr=0.1", "lr=10.0")')


def test_a_taken_code_or_name_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    for code, name, said in (("TD101", "brand-new", "TD101 is taken by softmax-before-cross-entropy"),
                             (LOSS_CODE, "softmax-before-cross-entropy", "a rule is named softmax-before-cross-entropy"),
                             ("TD1", "brand-new", "is not a rule code"), (LOSS_CODE, "Brand_New", "is not a kebab-case name"),
                             ("TD149", "brand-new", f"TD149 is outside the loss block ({codes.shown(codes.BLOCKS[Category.LOSS])})")):
        made = python(ROOT, "-m", "torchdoctor.dev", "new-rule", "--code", code, "--name", name,
                      "--category", "loss", "--lint", "--root", str(root))
        assert made.returncode == 2 and said in made.stderr, made.stderr
    made = python(ROOT, "-m", "torchdoctor.dev", "new-rule", "--code", LOSS_CODE, "--name", "brand-new",
                  "--category", "loss", "--root", str(root))
    assert made.returncode == 2 and "--lint, --run or --check" in made.stderr
    assert not root.exists()


def test_without_code_the_next_free_code_of_the_categorys_block_is_proposed(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    made = python(ROOT, "-m", "torchdoctor.dev", "new-rule", "--name", "brand-new", "--category", "loss", "--lint",
                  "--root", str(root))
    assert made.returncode == 0, made.stderr
    block = codes.shown(codes.BLOCKS[Category.LOSS])
    assert made.stdout.splitlines()[0] == f"code {LOSS_CODE}: the next free one of the loss block ({block})"
    assert f'code="{LOSS_CODE}"' in (root / "src" / "torchdoctor" / "rules" / "loss" / "brand_new.py").read_text(encoding="utf-8")
