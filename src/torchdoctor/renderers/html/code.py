"""Source code as HTML: the user's lines around a finding, and the rule docs' examples, with
Python highlighted by Pygments (which comes with rich) and Markdown by markdown-it-py (same).

Files are read as they are on disk when the report is written; a file that is gone or
unreadable simply shows no context.
"""

from __future__ import annotations

import re
import tokenize
from dataclasses import dataclass
from functools import lru_cache
from html import escape

from markdown_it import MarkdownIt
from markupsafe import Markup
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer
from pygments.token import STANDARD_TYPES, _TokenType

#: lines shown before and after a finding's lines
AROUND = 3
#: the CSS of the highlighted tokens (classes under `.code`), without Pygments' comments (token
#: type names such as `Generic.Traceback` are no text of the report)
STYLE = re.sub(r"\s*/\*.*?\*/", "", HtmlFormatter(style="default").get_style_defs(".code"))


@dataclass(frozen=True)
class Line:
    number: int
    html: Markup
    marked: bool


def _css_class(kind: _TokenType) -> str:
    while kind not in STANDARD_TYPES:
        kind = kind.parent
    return STANDARD_TYPES[kind]


def highlighted_lines(text: str) -> list[Markup]:
    """Each line of `text` as HTML (tokens that span lines, such as docstrings, split per line)."""
    lines: list[list[str]] = [[]]
    for kind, value in PythonLexer(stripnl=False, ensurenl=False).get_tokens(text):
        css = _css_class(kind)
        for i, piece in enumerate(value.split("\n")):
            if i:
                lines.append([])
            if piece:
                lines[-1].append(f'<span class="{css}">{escape(piece)}</span>' if css else escape(piece))
    if len(lines) > 1 and not lines[-1]:
        lines.pop()  # the text's last newline ends the last line; it starts none
    return [Markup("".join(parts)) for parts in lines]


@lru_cache(maxsize=64)
def _file_lines(path: str) -> tuple[Markup, ...] | None:
    try:
        with tokenize.open(path) as handle:  # the encoding the file declares, as Python reads it
            text = handle.read()
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    return tuple(highlighted_lines(text))


def forget() -> None:
    """Read files afresh from now on (they may have changed since the last report)."""
    _file_lines.cache_clear()


def context(path: str | None, line: int | None, end_line: int | None = None, around: int = AROUND) -> list[Line]:
    """The lines `line`..`end_line` of `path` (marked) with `around` lines on each side; [] when
    the file cannot be read or has no such line."""
    if path is None or line is None:
        return []
    lines = _file_lines(path)
    if lines is None or not 1 <= line <= len(lines):
        return []
    last = min(max(end_line or line, line), line + 20, len(lines))
    first, stop = max(1, line - around), min(len(lines), last + around)
    return [Line(n, lines[n - 1], line <= n <= last) for n in range(first, stop + 1)]


def _highlight_block(code: str, language: str, _attrs: str) -> str:
    if language not in ("python", "py", ""):
        return ""  # markdown-it escapes it as a plain block
    body = "\n".join(highlighted_lines(code.rstrip("\n")))
    return f'<pre class="code"><code>{body}</code></pre>'


_MARKDOWN = MarkdownIt("commonmark", {"html": False, "highlight": _highlight_block})


def markdown(text: str, demote: int = 2) -> Markup:
    """A rule doc (Markdown, with Python examples) as HTML, its headings `demote` levels lower
    (a doc's `##` under the page's own headings); raw HTML in the text is escaped."""
    tokens = _MARKDOWN.parse(text)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1:]) + demote)}"
    return Markup(_MARKDOWN.renderer.render(tokens, _MARKDOWN.options, {}))


def inline(text: str) -> Markup:
    """Escaped text with `code spans` as <code>; a backtick without a partner stays a backtick."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an odd number of backticks: the last one has no partner
        parts[-2:] = [f"{parts[-2]}`{parts[-1]}"]
    return Markup("".join(escape(part) if i % 2 == 0 else f"<code>{escape(part)}</code>" for i, part in enumerate(parts)))
