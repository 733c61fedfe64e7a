"""bench/readme_transcript.py: the README's console blocks are read as commands and outputs,
and what a command prints matches its block up to timings and elided tracebacks, no further."""

from __future__ import annotations

from pathlib import Path

from tests.bench.bench_module import load

ROOT = Path(__file__).resolve().parents[2]


transcript = load("readme_transcript", "readme_transcript.py")

SHOWN = [
    "Traceback (most recent call last):",
    "  ...",
    "RuntimeError: mat1 and mat2 must have the same dtype",
    "torchdoctor run x.py · script exited 1 · torchdoctor exits 1 (1 error) · 2.9 s",
    "✅  5. all_reduce · gloo: 1 KiB 414 µs · 64 KiB 3.7 ms 0.02 GB/s · MASTER_ADDR:PORT 127.0.0.1:45535",
]
RAN = [
    "Traceback (most recent call last):",
    '  File "x.py", line 3, in <module>',
    "    main()",
    "RuntimeError: mat1 and mat2 must have the same dtype",
    "torchdoctor run x.py · script exited 1 · torchdoctor exits 1 (1 error) · 3.4 s",
    "✅  5. all_reduce · gloo: 1 KiB 390 µs · 64 KiB 12 ms 0.01 GB/s · MASTER_ADDR:PORT 127.0.0.1:40001",
]


def test_timings_ports_and_elided_tracebacks_match() -> None:
    assert transcript.matches(SHOWN, RAN)


def test_anything_else_that_changed_is_stale() -> None:
    assert not transcript.matches(SHOWN, [line.replace("script exited 1", "script exited 0") for line in RAN])
    assert not transcript.matches(SHOWN, [line.replace("1 KiB", "2 KiB") for line in RAN])
    assert not transcript.matches(SHOWN[:-1], RAN)  # a line the README does not show
    assert not transcript.matches(["step 100: loss 2.2007"], ["step 100: loss 2.2008"])  # losses are not timings
    assert not transcript.matches(["300 optimizer steps · 3.3 s"], ["301 optimizer steps · 3.3 s"])


def test_a_stale_block_keeps_the_readmes_shortened_traceback() -> None:
    assert transcript.shortened(SHOWN, RAN)[:3] == SHOWN[:3]
    assert transcript.shortened(["no traceback"], RAN) == RAN


def test_every_console_block_of_the_readme_is_a_list_of_commands() -> None:
    blocks = transcript.blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    commands = [c.command for block in blocks for c in block.commands]
    assert "torchdoctor check examples/lab/01_softmax_before_cross_entropy.py:make" in commands
    assert all(c.expected for block in blocks for c in block.commands)


def test_a_machine_specific_block_is_compared_up_to_each_lines_first_colon() -> None:
    shown = ["✅  1. Python & OS: Python 3.11.7 · Linux 6.18.44-fc-v669", "✅  8. Environment variables: VIRTUAL_ENV=/v"]
    here = ["✅  1. Python & OS: Python 3.11.7 · Linux 6.18.44-fc-v1147", "✅  8. Environment variables: VIRTUAL_ENV=/v, PYTHONPATH set"]
    assert transcript.matches(shown, here, machine_specific=True) and not transcript.matches(shown, here)
    assert not transcript.matches(shown, ["❌  1. Python & OS: Python 3.11.7", here[1]], machine_specific=True)
    text = "x\n<!-- transcript: machine-specific -->\n```console\n$ torchdoctor env\nout\n```\n```console\n$ ls\na\n```\n"
    assert [block.machine_specific for block in transcript.blocks(text)] == [True, False]


def test_a_rewritten_block_keeps_the_timings_of_the_lines_that_did_not_change() -> None:
    shown = ["step 100: loss 2.2007", "run x.py · exit status 0 · 3.3 s", "done in 1.0 s"]
    ran = ["step 100: loss 2.2007", "run x.py · script exited 0 · 41.9 s", "done in 9.9 s"]
    assert transcript.merged(shown, ran) == ["step 100: loss 2.2007", "run x.py · script exited 0 · 41.9 s", "done in 1.0 s"]
