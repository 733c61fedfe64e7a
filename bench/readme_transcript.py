"""A new user's transcript of the README: run every command of its ```console blocks, as the
README shows them (from the repository root, stdout and stderr together, as a terminal shows
them), and compare what they print with what the README says they print.

Timings, rates and ports differ from run to run and are compared as "some number" (`3.3 s`
matches `2.9 s`); a line `...` (any indentation) in the README stands for any lines, as in a
traceback shown by its first and last lines. Everything else must match exactly, except in a
block the README marks `<!-- transcript: machine-specific -->` on the line before it (`env`,
`dist`: kernel versions, interfaces, load): there each line must match up to its first `: `
(the check's icon, number and title, a finding's code and subject).

    python bench/readme_transcript.py            # compare: exit 1 and a diff when a block is stale
    python bench/readme_transcript.py --update   # rewrite the stale blocks with what ran
    python bench/readme_transcript.py --update --rewrite --only "torchdoctor run"   # timings too

`--update` keeps a block that still matches as it is, and in a stale one the lines that still
match (no churn of timings); the others are written as they ran, a traceback again shortened to
its first and last lines where the README shortened it.
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "$ "
#: numbers that differ from run to run: durations, rates, sizes next to a time, ports
VARYING = re.compile(
    r"\d+(?:\.\d+)?(?= ?(?:s|ms|µs|us|GB/s|MB/s)\b)"
    r"|(?<=127\.0\.0\.1:)\d+"
)
ELIDED = re.compile(r"^\s*\.\.\.$")
MACHINE_SPECIFIC = "<!-- transcript: machine-specific -->"


@dataclass
class Command:
    """One `$ command` of a console block and the lines the README shows after it."""

    command: str
    expected: list[str]


@dataclass
class Block:
    """A ```console block: its body's lines in the file (`start` to `end`, 0-based, end excluded)
    and its commands."""

    start: int
    end: int
    commands: list[Command]
    machine_specific: bool = False


def blocks(text: str) -> list[Block]:
    """The README's console blocks, each split into its commands."""
    lines = text.split("\n")
    found: list[Block] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```console":
            end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "```")
            commands: list[Command] = []
            for line in lines[index + 1:end]:
                if line.startswith(PROMPT):
                    commands.append(Command(line[len(PROMPT):], []))
                elif commands:
                    commands[-1].expected.append(line)
                else:
                    raise ValueError(f"line {index + 2}: a console block must start with `{PROMPT}command`")
            machine = index > 0 and lines[index - 1].strip() == MACHINE_SPECIFIC
            found.append(Block(index + 1, end, commands, machine))  # the body: after the fence, up to the closing one
            index = end
        index += 1
    return found


def _pattern(line: str) -> str:
    """A README line as a regex: its varying numbers match any number."""
    parts, last = [], 0
    for match in VARYING.finditer(line):
        parts += [re.escape(line[last:match.start()]), r"\d+(?:\.\d+)?"]
        last = match.end()
    return "".join(parts) + re.escape(line[last:])


def matches(expected: list[str], actual: list[str], machine_specific: bool = False) -> bool:
    """True when `actual` is what `expected` shows, up to varying numbers and `...` elisions
    (and, `machine_specific`, up to each line's first `: `)."""
    if machine_specific:
        return [_head(line) for line in expected] == [_head(line) for line in actual]
    pattern = "".join(r"(?:[^\n]*\n)*?" if ELIDED.match(line) else _pattern(line) + r"\n" for line in expected)
    return re.fullmatch(pattern, "".join(line + "\n" for line in actual)) is not None


def _head(line: str) -> str:
    return line.split(": ", 1)[0]


def merged(expected: list[str], actual: list[str]) -> list[str]:
    """`actual`, keeping the README's own version of each line that still matches it (its
    timings), so that a rewritten block changes only where the output did."""
    def key(line: str) -> str:
        return VARYING.sub("#", line)

    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, [key(line) for line in expected], [key(line) for line in actual], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        out += expected[i1:i2] if tag == "equal" else actual[j1:j2]
    return out


def shortened(expected: list[str], actual: list[str]) -> list[str]:
    """`actual` with each traceback shortened to its first and last lines where `expected`
    shortened one (the elision line as the README wrote it)."""
    elision = next((line for line in expected if ELIDED.match(line)), None)
    if elision is None:
        return actual
    out: list[str] = []
    inside = False
    for line in actual:
        if line == "Traceback (most recent call last):":
            out += [line, elision]
            inside = True
        elif inside and line.startswith((" ", "\t")):
            continue
        else:
            inside = False
            out.append(line)
    return out


def run(command: str, timeout: float) -> list[str]:
    """What the command prints, stdout and stderr together, without the last newline."""
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout)
    return done.stdout.rstrip("\n").split("\n") if done.stdout.strip() else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", type=Path, default=ROOT / "README.md")
    parser.add_argument("--update", action="store_true", help="rewrite the blocks whose output changed")
    parser.add_argument("--rewrite", action="store_true",
                        help="with --update: rewrite every command's output as it ran, timings included")
    parser.add_argument("--only", metavar="TEXT", help="only the commands that contain TEXT")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per command (default: 600)")
    args = parser.parse_args(argv)
    text = args.file.read_text(encoding="utf-8")
    lines = text.split("\n")
    stale = 0
    for block in reversed(blocks(text)):  # from the end, so that rewriting keeps earlier line numbers
        body: list[str] = []
        for command in block.commands:
            body.append(PROMPT + command.command)
            if args.only and args.only not in command.command:
                body += command.expected
                continue
            actual = run(command.command, args.timeout)
            if matches(command.expected, actual, block.machine_specific) and not args.rewrite:
                body += command.expected
                print(f"ok     {command.command}")
                continue
            stale += 1
            fresh = shortened(command.expected, actual)
            fresh = fresh if args.rewrite else merged(command.expected, fresh)
            print(f"STALE  {command.command}")
            sys.stdout.writelines(difflib.unified_diff([line + "\n" for line in command.expected], [line + "\n" for line in fresh],
                                                       "README", "ran", n=1))
            body += fresh
        lines[block.start:block.end] = body
    if args.update and stale:
        args.file.write_text("\n".join(lines), encoding="utf-8")
        print(f"{args.file}: {stale} command(s) rewritten with what they printed")
        return 0
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
