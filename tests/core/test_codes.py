"""Codes by category block (core/codes.py): each category's new rules take codes of its block;
the codes taken before the blocks keep their numbers."""

from __future__ import annotations

from torchdoctor.core import codes
from torchdoctor.core.finding import Category
from torchdoctor.core.registry import all_rules


def test_every_category_has_a_block_and_the_blocks_do_not_overlap() -> None:
    assert set(codes.BLOCKS) == set(Category)
    numbers = [number for block in (*codes.BLOCKS.values(), codes.TOOL_BLOCK) for number in block]
    assert len(numbers) == len(set(numbers))
    assert all(0 <= number <= 999 for number in numbers)


def test_the_blocks_lay_free_when_given() -> None:
    taken = {int(code[2:]) for code in codes.GRANDFATHERED}
    assert not [codes.code(n) for block in codes.BLOCKS.values() for n in block if n in taken]
    assert not [code for code in codes.GRANDFATHERED if int(code[2:]) in codes.TOOL_BLOCK]


def test_every_rule_has_a_code_of_its_categorys_block_or_one_taken_before_the_blocks() -> None:
    wrong = [f"{rule.code} ({rule.category.value})" for rule in all_rules() if not codes.allowed(rule.category, rule.code)]
    assert not wrong, "take the next free code of the category's block (`python -m torchdoctor.dev new-rule`)"


def test_a_code_outside_the_block_is_refused_unless_grandfathered_or_the_tools() -> None:
    assert codes.allowed(Category.LOSS, "TD320") and codes.allowed(Category.LOSS, "TD339")
    assert not codes.allowed(Category.LOSS, "TD340") and not codes.allowed(Category.LOSS, "TD200")
    assert codes.allowed(Category.LOSS, "TD101")  # softmax-before-cross-entropy, from the old shared range
    assert codes.allowed(Category.API, "TD008")


def test_the_next_free_code_skips_the_taken_ones_and_is_none_when_the_block_is_full() -> None:
    assert codes.next_free(Category.DEVICE, []) == "TD200"
    assert codes.next_free(Category.DEVICE, ["TD200", "TD201", "TD203"]) == "TD202"
    assert codes.next_free(Category.DEVICE, [codes.code(n) for n in codes.BLOCKS[Category.DEVICE]]) is None
    assert codes.shown(codes.BLOCKS[Category.DEVICE]) == "TD200–TD219"
