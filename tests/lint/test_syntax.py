"""Which Python a file that does not parse here needs (linter/syntax.py), read off its tokens.

Each construct below was parsed on CPython 3.10, 3.11 and 3.12: a SyntaxError before the
version named, accepted from it on."""

from __future__ import annotations

import pytest

from torchdoctor.linter.syntax import newer_syntax

NEWER = [
    ("def first[T](items: list[T]) -> T:\n    return items[0]\n", 1, (3, 12), "a generic function"),
    ("async def first[T](items: list[T]) -> T:\n    return items[0]\n", 1, (3, 12), "a generic function"),
    ("class Box[T]:\n    pass\n", 1, (3, 12), "a generic class"),
    ("class Box[T](\n    Base,\n):\n    pass\n", 2, (3, 12), "a generic class"),
    ("import torch\ntype Pair = tuple[int, int]\n", 2, (3, 12), "a type alias statement"),
    ("type Vec[T] = list[T]\n", 1, (3, 12), "a type alias statement"),
]


@pytest.mark.parametrize(("text", "line", "version", "what"), NEWER, ids=[w + str(i) for i, (_, _, _, w) in enumerate(NEWER)])
def test_newer_syntax_is_named_with_its_version(text: str, line: int, version: tuple[int, int], what: str) -> None:
    found = newer_syntax(text, line, running=(3, 11))
    assert found is not None and found[0] == version and found[1].startswith(what)


def test_exception_groups_need_3_11_only_below_it() -> None:
    text = "try:\n    pass\nexcept* ValueError:\n    pass\n"
    assert newer_syntax(text, 3, running=(3, 10)) == ((3, 11), "an exception group handler (`except*`, PEP 654)")
    assert newer_syntax(text, 3, running=(3, 11)) is None


@pytest.mark.parametrize("text", [
    "for x in y\n    pass\n",             # a plain syntax error
    "print 'hello'\n",                     # Python 2
    "type = int\n",                        # `type` as a name
    "x = type(y)\n",
    "items[T] = 1\ndef f(:\n    pass\n",  # the error is on another line
])
def test_broken_code_is_not_taken_for_newer_syntax(text: str) -> None:
    line = 2 if text.startswith("items") else 1
    assert newer_syntax(text, line, running=(3, 11)) is None


def test_a_python_that_has_the_syntax_gets_no_version_notice() -> None:
    assert newer_syntax("def first[T](items: list[T]) -> T:\n    return items[0]\n", 1, running=(3, 12)) is None
