"""Reading one file: bytes to text the way Python itself would, or a clear reason why not.

The text keeps its line endings (so fixes can be written back byte for byte elsewhere), and
`Source` maps between `ast` positions (UTF-8 byte columns) and character offsets.
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from array import array
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
    """One Python file's text, as decoded for `ast.parse`.

    Line boundaries are found once per file (`_starts`) and every position, line and segment
    is read from that table, so quoting many nodes of a big file stays linear in its size.
    """

    path: str  # as displayed and reported (relative to the working directory when below it)
    text: str
    encoding: str = "utf-8"
    _starts: array | None = field(default=None, repr=False)

    def _line_starts(self) -> array:
        """Character offset of the start of every line (a text ending in a newline ends in an
        empty line, as `ast` counts them)."""
        if self._starts is None:
            starts = array("q", [0])
            starts.extend(match.end() for match in _NEWLINE.finditer(self.text))
            self._starts = starts
        return self._starts

    def line(self, number: int) -> str:
        """Line `number` (1-based) without its line ending; "" outside the file."""
        starts = self._line_starts()
        if not 0 < number <= len(starts):
            return ""
        end = starts[number] if number < len(starts) else len(self.text)
        text = self.text[starts[number - 1]:end]
        return text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith(("\n", "\r")) else text

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


def read_source(path: Path) -> str:
    """A Python file's text as the interpreter decodes it (Unreadable says why not, with the line):
    what `run` and `check` read before they run or import a file, so that an undecodable one is
    refused in words rather than by a SyntaxError without a line."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise Unreadable("unreadable", exc.strerror or type(exc).__name__) from None
    return decode(data)[0]


def decode(data: bytes) -> tuple[str, str]:
    """(text, encoding) using the BOM or `# -*- coding: ... -*-` cookie, as the interpreter does.
    Raises Unreadable("undecodable") with the line at fault, in words."""
    nul = data.find(b"\0")
    if nul >= 0:
        line = data[:nul].count(b"\n") + 1
        raise Unreadable("undecodable", f"line {line} contains a NUL byte (a binary file, not Python source)", line=line)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # an unknown encoding, or a cookie that contradicts the BOM
        line = _cookie_line(data) or 1
        message = str(exc.msg)
        problem = (f"declares an unknown encoding {message.rsplit(': ', 1)[-1]!r}" if message.startswith("unknown encoding")
                   else "declares an encoding that contradicts the file's UTF-8 byte order mark")
        raise Unreadable("undecodable", f"line {line} {problem}", line=line) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        byte = f"byte {data[exc.start]:#04x}"
        if _cookie_line(data):
            problem = f"line {line} is not {encoding} ({byte}), the encoding the file declares"
        else:
            problem = (f"line {line} is not UTF-8 ({byte}) and the file declares no other encoding "
                       "(save it as UTF-8, or declare its encoding: # -*- coding: latin-1 -*-)")
        raise Unreadable("undecodable", problem, line=line) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text, encoding


_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")


def _cookie_line(data: bytes) -> int | None:
    """The line (1 or 2) of the `coding` declaration, as PEP 263 places it (None without one)."""
    lines = data.split(b"\n", 2)[:2]
    for number, line in enumerate(lines, 1):
        if _COOKIE.match(line):
            return number
        if not line.strip().startswith(b"#") and line.strip():
            break
    return None
