"""Syntax newer than the running Python: which version a file that does not parse here needs.

`ast.parse` can only read the grammar of the interpreter it runs in, so a file written for a
newer Python (PEP 695 generics on 3.11) fails to parse exactly like a broken one. The tokenizer
still reads such lines (their tokens are old ones in a new order), so the logical line where the
parser stopped is matched against the statements each newer grammar added.
"""

from __future__ import annotations

import io
import sys
import tokenize
from collections.abc import Sequence

Version = tuple[int, int]

def newer_syntax(text: str, line: int, running: Version | None = None) -> tuple[Version, str] | None:
    """(the Python version, what it is) when the logical line around `line` uses syntax that a
    Python newer than `running` (default: this one) added; None when it does not, or when the
    line cannot be told apart from a plain syntax error."""
    here = running or (sys.version_info.major, sys.version_info.minor)
    statement = _logical_line(text, line)
    if statement is None:
        return None
    found = _construct(statement)
    if found is None or found[0] <= here:
        return None
    return found


def _logical_line(text: str, line: int) -> list[tokenize.TokenInfo] | None:
    """The tokens of the logical line (a statement's header, or a simple statement) that spans `line`."""
    current: list[tokenize.TokenInfo] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING):
                continue
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                if current and current[0].start[0] <= line <= token.start[0]:
                    return current
                if current and current[0].start[0] > line:
                    return None
                current = []
                continue
            current.append(token)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return current if current and current[0].start[0] <= line else None


def _construct(tokens: Sequence[tokenize.TokenInfo]) -> tuple[Version, str] | None:
    words = [t.string for t in tokens]
    kinds = [t.type for t in tokens]
    first = 1 if words[:1] == ["async"] else 0
    head = words[first:first + 3]
    if len(head) == 3 and head[0] in ("def", "class") and kinds[first + 1] == tokenize.NAME and head[2] == "[":
        what = "a generic function" if head[0] == "def" else "a generic class"
        return (3, 12), f"{what} (`{head[0]} {head[1]}[...]`, PEP 695)"
    if (len(words) >= 3 and words[0] == "type" and kinds[1] == tokenize.NAME and words[2] in ("=", "[")
            and "=" in words):
        return (3, 12), f"a type alias statement (`type {words[1]} = ...`, PEP 695)"
    if words[:2] == ["except", "*"]:
        return (3, 11), "an exception group handler (`except*`, PEP 654)"
    return None
