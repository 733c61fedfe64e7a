"""The installed torch's `native_functions.yaml`: every aten op's entry, with its line.

The yaml ships inside the torch wheel (`torchgen/packaged/ATen/native/native_functions.yaml`,
a copy of `aten/src/ATen/native/native_functions.yaml` in the repository), so the entry shown
is the one this install was generated from, offline. It is read with the standard library:
the file uses a small, regular subset of YAML (a list of flat mappings; `dispatch` and
`ufunc_inner_loop` are one level deeper; a few flow lists; `#` comments), and reading it this
way gives each entry's line number, takes about as long as one `import`, and needs no YAML
package (tests/trace/test_native.py checks every entry against PyYAML's reading of the file).

No torch here: the file is found through `torchgen`'s location, without importing it.
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RELATIVE = Path("packaged") / "ATen" / "native" / "native_functions.yaml"
#: where the same file lives in the PyTorch repository (for links at the installed version)
REPOSITORY_PATH = "aten/src/ATen/native/native_functions.yaml"

Value = Any  # str, bool, list[str], dict[str, str]


@dataclass(frozen=True)
class Entry:
    """One `- func:` entry: its overload name (`add.Tensor`), schema, line, and other fields."""

    name: str
    schema: str
    line: int
    fields: dict[str, Value] = field(default_factory=dict)
    end: int = 0  # its last line that is not blank or a comment

    @property
    def dispatch(self) -> dict[str, str]:
        """Dispatch key(s) -> kernel function, one key per item (`CPU, CUDA: f` gives two)."""
        table = self.fields.get("dispatch")
        if not isinstance(table, dict):
            return {}
        return {key.strip(): kernel for keys, kernel in table.items() for key in keys.split(",") if key.strip()}

    @property
    def structured_delegate(self) -> str | None:
        value = self.fields.get("structured_delegate")
        return value if isinstance(value, str) else None

    @property
    def tags(self) -> list[str]:
        value = self.fields.get("tags")
        if value is None:
            return []
        return [value] if isinstance(value, str) else [str(v) for v in value]


@dataclass(frozen=True)
class NativeFunctions:
    path: Path
    entries: dict[str, Entry]

    def text(self, entry: Entry) -> str:
        """The entry as written in the file."""
        lines = self.path.read_text(encoding="utf-8").splitlines()
        return "\n".join(lines[entry.line - 1: max(entry.end, entry.line)])

    def get(self, name: str) -> Entry | None:
        """The entry of `aten::add.Tensor`, `add.Tensor` or `aten::mm` (the default overload)."""
        return self.entries.get(name.removeprefix("aten::"))


def installed_path() -> Path | None:
    """The yaml of the torch installed with this Python (None when torchgen is not there)."""
    try:
        spec = importlib.util.find_spec("torchgen")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / RELATIVE
        if path.is_file():
            return path
    return None


@functools.lru_cache(maxsize=4)
def load(path: Path) -> NativeFunctions:
    return NativeFunctions(path, {entry.name: entry for entry in parse(path.read_text(encoding="utf-8"))})


def installed() -> NativeFunctions | None:
    path = installed_path()
    return load(path) if path is not None else None


def parse(text: str, head: str = "func") -> list[Entry]:
    """The entries of the file, in order (see the module's doc for the subset understood);
    each starts with `- <head>:` (`func` in native_functions.yaml, `name` in derivatives.yaml)."""
    opener = f"- {head}:"
    entries: list[Entry] = []
    current: dict[str, Value] | None = None
    start = last = 0
    container: str | None = None  # the key whose nested lines follow
    for number, raw in enumerate(text.splitlines(), 1):
        line = _uncomment(raw).rstrip()
        if not line.strip():
            continue
        if line.startswith(opener):
            if current is not None:
                entries.append(_entry(current, start, last, head))
            current, start, last, container = {head: line[len(opener):].strip()}, number, number, None
            continue
        if current is None:
            continue
        last = number
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if indent == 2 and not body.startswith("- "):
            key, _, value = body.partition(":")
            value = value.strip()
            if value:
                current[key.strip()] = _scalar(value)
                container = None
            else:
                container = key.strip()
                current[container] = None
        elif container is not None and body.startswith("- "):
            items = current[container] if isinstance(current[container], list) else []
            items.append(_scalar(body[2:].strip()))
            current[container] = items
        elif container is not None and indent > 2:
            key, _, value = body.partition(":")
            table = current[container] if isinstance(current[container], dict) else {}
            table[key.strip()] = _scalar(value.strip())
            current[container] = table
    if current is not None:
        entries.append(_entry(current, start, last, head))
    return entries


def _entry(fields: dict[str, Value], line: int, end: int, head: str) -> Entry:
    schema = str(fields.pop(head))
    return Entry(name=schema.split("(", 1)[0].strip(), schema=schema, line=line, fields=fields, end=max(end, line))


def _uncomment(line: str) -> str:
    """The line without a `#` comment (a `#` at the start or after a space, outside quotes)."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return line[:index]
    return line


def _scalar(text: str) -> Value:
    if text.startswith("[") and text.endswith("]"):
        return [_scalar(item.strip()) for item in text[1:-1].split(",") if item.strip()]
    if text == "{}":
        return {}
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    return _unquote(text)


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text
