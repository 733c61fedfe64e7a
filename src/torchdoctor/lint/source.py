"""Reading one file: bytes to text the way Python itself would, or a clear reason why not.

The text keeps its line endings (so fixes can be written back byte for byte elsewhere), and
`Lines` maps between `ast` positions (UTF-8 byte columns) and character columns.
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

#: larger files are skipped with a notice: generated code, not something a person edits
MAX_BYTES = 8 * 1024 * 1024

_NEWLINE = re.compile(r"\r\n|\r|\n")


class Unreadable(Exception):
    """The file cannot be linted; `kind` picks the TD00x rule, `reason` says why in words."""

    def __init__(self, kind: str, reason: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(reason)
        self.kind = kind  # "unreadable" | "undecodable" | "too-large"
        self.reason = reason
        self.line = line
        self.column = column


@dataclass
class Source:
    """One Python file's text, as decoded for `ast.parse`."""

    path: str  # as displayed and reported (relative to the working directory when below it)
    text: str
    encoding: str = "utf-8"
    _lines: list[str] | None = field(default=None, repr=False)

    @property
    def lines(self) -> list[str]:
        """Lines without their line endings; `lines[n - 1]` is line n (split as Python does)."""
        if self._lines is None:
            self._lines = _NEWLINE.split(self.text)
        return self._lines

    def line(self, number: int) -> str:
        lines = self.lines
        return lines[number - 1] if 0 < number <= len(lines) else ""

    def char_column(self, line: int, byte_column: int) -> int:
        """`ast` columns count UTF-8 bytes; findings and edits count characters."""
        text = self.line(line)
        if text.isascii():
            return byte_column
        return len(text.encode("utf-8")[:byte_column].decode("utf-8", errors="ignore"))

    def offset(self, line: int, column: int) -> int:
        """Absolute character offset of (1-based line, 0-based character column) in `text`."""
        starts = self._line_starts()
        return starts[min(line, len(starts)) - 1] + column

    def _line_starts(self) -> list[int]:
        starts = [0]
        for match in _NEWLINE.finditer(self.text):
            starts.append(match.end())
        return starts

    def segment(self, node: object) -> str:
        """The source text of an `ast` node (empty when it has no position)."""
        line = getattr(node, "lineno", None)
        end_line = getattr(node, "end_lineno", None)
        if line is None or end_line is None:
            return ""
        start = self.offset(line, self.char_column(line, node.col_offset))  # type: ignore[attr-defined]
        end = self.offset(end_line, self.char_column(end_line, node.end_col_offset))  # type: ignore[attr-defined]
        return self.text[start:end]


def read_bytes(path: Path, max_bytes: int | None = MAX_BYTES) -> bytes:
    """The file's bytes, or `Unreadable` (missing, a directory, permission, a link loop, or
    bigger than `max_bytes`; None: no limit, for files the user named)."""
    try:
        size = os.stat(path).st_size
        if max_bytes is not None and size > max_bytes:
            raise Unreadable(
                "too-large", f"{size / 1024 / 1024:.1f} MB is over the {max_bytes // 1024 // 1024} MB limit for one file"
            )
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise Unreadable("unreadable", exc.strerror or type(exc).__name__) from None


def decode(data: bytes) -> tuple[str, str]:
    """(text, encoding) using the BOM or `# -*- coding: ... -*-` cookie, as the interpreter does."""
    if b"\0" in data[:8192] or b"\0" in data:
        raise Unreadable("undecodable", "it contains NUL bytes (a binary file, not Python source)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise Unreadable("undecodable", str(exc)) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise Unreadable(
            "undecodable", f"byte {data[exc.start]:#04x} at line {line} is not valid {encoding}", line=line
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text, encoding
