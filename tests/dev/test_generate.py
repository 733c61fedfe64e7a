"""`python -m torchdoctor.dev generate`: the docs that repeat the rules are written from them, so
a rule added, renamed or reworded without regenerating them fails here."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from torchdoctor.core import codes, registry
from torchdoctor.core.errors import UsageError
from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule
from torchdoctor.dev.generate import (
    blocks_table,
    check_table,
    fill_blocks,
    generate,
    health_checks,
    lint_rules,
    run_table,
    stale,
)

ROOT = Path(__file__).resolve().parents[2]


def test_every_derived_doc_of_the_checkout_is_what_the_rules_give() -> None:
    assert stale(ROOT) == [], "run `python -m torchdoctor.dev generate`"


def docs_copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "README.md", tmp_path)
    return tmp_path


def test_a_row_edited_by_hand_and_a_wrong_count_are_found_and_written_back(tmp_path: Path) -> None:
    root = docs_copy(tmp_path)
    lint_md = root / "docs" / "lint.md"
    lint_md.write_text(lint_md.read_text(encoding="utf-8").replace("| TD101 |", "| TD999 |", 1), encoding="utf-8")
    readme = root / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace(f"{len(registry.all_rules())} rules, each", "7 rules, each"),
                      encoding="utf-8")
    assert sorted(stale(root)) == [readme, lint_md]
    assert sorted(generate(root)) == [readme, lint_md]
    assert stale(root) == []
    assert lint_md.read_text(encoding="utf-8") == (ROOT / "docs" / "lint.md").read_text(encoding="utf-8")
    assert readme.read_text(encoding="utf-8") == (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_lint_table_has_one_row_per_rule_lint_reports_in_its_own_words() -> None:
    table = fill_blocks("<!-- generated: lint rules -->\n<!-- end generated -->\n", "page.md")
    rows = [line for line in table.splitlines() if line.startswith("| TD")]
    assert [row.split(" | ")[0].strip("| ") for row in rows] == [rule.code for rule in lint_rules()]
    td101 = registry.get("TD101")
    assert f"| TD101 | `softmax-before-cross-entropy` | error | | {td101.sees['lint']} |" in rows


def test_run_blocks_split_the_categories_and_the_rest_takes_what_no_block_names() -> None:
    page = ("<!-- generated: run rules: the rest -->\n<!-- end generated -->\n"
            "<!-- generated: run rules: compile, memory -->\nold text\n<!-- end generated -->\n")
    rest, named = fill_blocks(page, "page.md").split("<!-- generated: run rules: compile, memory -->")
    assert "old text" not in named
    assert "| TD480 `compile-graph-break`" in named and "| TD440 `memory-leak`" in named
    assert "TD480" not in rest and "TD440" not in rest
    assert "| TD131 `training-in-eval-mode` | mode | error |" in rest


def test_the_check_table_has_one_row_per_health_check_in_the_reports_order() -> None:
    table = fill_blocks("<!-- generated: health checks -->\nold row\n<!-- end generated -->\n", "page.md")
    assert "old row" not in table
    rows = [line for line in table.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [row.split(" | ")[1].strip("`") for row in rows] == [check.NAME for check in health_checks()]
    loader = next(check for check in health_checks() if check.NAME == "dataloader")
    assert f"| 13 | `dataloader` | {loader.DOES} | {', '.join(loader.RULES)} |" in rows


def test_a_check_without_words_for_the_table_is_listed_with_its_title() -> None:
    check = ModuleType("td_plugin.widget")
    vars(check).update(NAME="widget", TITLE="widgets | gadgets are sound", RULES=("TD101", "TD102"))
    assert check_table([check]).splitlines()[-1] == "| 1 | `widget` | widgets \\| gadgets are sound | TD101, TD102 |"


def test_the_code_blocks_table_gives_each_categorys_block_and_next_free_code() -> None:
    table = fill_blocks("<!-- generated: code blocks -->\n<!-- end generated -->\n", "page.md")
    rows = [line for line in table.splitlines() if line.startswith("| ") and " | TD" in line]
    assert len(rows) == len(codes.BLOCKS)
    device = [rule for rule in registry.all_rules() if rule.category is Category.DEVICE]
    assert f"| device | TD200–TD219 | {codes.next_free(Category.DEVICE, [r.code for r in device])} | {len(device)} |" in rows
    rules = [Rule(code=codes.code(n), name=f"made-up-{n}", category=Category.DEVICE, severity=Severity.ERROR,
                  message="m", hint="h", doc="x", proof="run") for n in codes.BLOCKS[Category.DEVICE]]
    assert "| device | TD200–TD219 | none: give it another block | 20 |" in blocks_table(rules)


def test_a_quoted_marker_in_a_pages_text_is_no_block() -> None:
    page = "Tables lie between `<!-- generated: ... -->` markers.\n<!-- generated: code blocks -->\n<!-- end generated -->\n"
    assert "| device | TD200–TD219 |" in fill_blocks(page, "page.md")


def test_a_rule_without_words_for_run_is_listed_with_the_first_sentence_of_its_doc() -> None:
    rule = Rule(code="TD998", name="widget-misused", category=Category.OPTIMIZER, severity=Severity.WARNING,
                message="m", hint="h", proof="run", doc="## What it does\nFlags a widget. More | detail.\n")
    assert "| TD998 `widget-misused` | optimizer | warning | Flags a widget. |" in run_table([rule])
    said = Rule(code="TD998", name="widget-misused", category=Category.OPTIMIZER, severity=Severity.WARNING,
                message="m", hint="h", proof="run", doc="## What it does\nx.\n", sees={"run": "a | b"})
    assert "| a \\| b |" in run_table([said])


@pytest.mark.parametrize(("page", "said"), [
    ("<!-- generated: lint rules -->\nno end\n", "without its `<!-- end generated -->`"),
    ("<!-- generated: lint table -->\n<!-- end generated -->\n", "unknown generated block 'lint table'"),
    ("<!-- generated: run rules: losses -->\n<!-- end generated -->\n", "names no category ['losses']"),
])
def test_a_malformed_block_is_an_error_naming_the_page(page: str, said: str) -> None:
    with pytest.raises(UsageError, match="page.md") as raised:
        fill_blocks(page, "page.md")
    assert said in str(raised.value)


def test_sees_names_only_commands_with_a_generated_table() -> None:
    with pytest.raises(ValueError, match="TD998: sees names \\['trace'\\]"):
        Rule(code="TD998", name="widget-misused", category=Category.OPTIMIZER, severity=Severity.WARNING,
             message="m", hint="h", proof="run", doc="x", sees={"trace": "y"})


def test_the_command_checks_writes_and_says_what(tmp_path: Path) -> None:
    root = docs_copy(tmp_path)
    (root / "docs" / "rules.md").write_text("stale\n", encoding="utf-8")

    def dev(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "torchdoctor.dev", "generate", *args, "--root", str(root)],
                              capture_output=True, text=True, timeout=300)

    checked = dev("--check")
    assert (checked.returncode, checked.stdout) == (1, "stale docs/rules.md\n")
    assert "python -m torchdoctor.dev generate" in checked.stderr
    assert dev().stdout == "wrote docs/rules.md\n"
    again = dev("--check")
    assert (again.returncode, again.stdout) == (0, "")
