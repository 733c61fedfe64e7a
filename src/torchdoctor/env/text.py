"""Small text helpers shared by `env` and `dist`: errors as one line, sizes for people."""

from __future__ import annotations

from torchdoctor.env.redact import redact_text


def one_line(error: BaseException, limit: int = 300) -> str:
    """The error as one line (type and message, without C++ stack frames), secrets masked."""
    text = str(error).split("Exception raised from", 1)[0]
    text = " ".join(f"{type(error).__name__}: {text}".split())
    text = redact_text(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def human_bytes(count: float) -> str:
    """67108864 -> "64 MiB", 1536 -> "1.5 KiB"."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if count < 1024 or unit == "TiB":
            return f"{count:.0f} {unit}" if unit == "B" or count == int(count) else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count} B"
