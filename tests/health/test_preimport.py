"""What `check` reads in a target's source before importing it (health/preimport.py): both
sides of "defines the factory" and of "trains when imported"."""

from __future__ import annotations

import pytest

from torchdoctor.health.preimport import parse


@pytest.mark.parametrize(
    ("source", "binds"),
    [
        ("def make():\n    pass\n", True),
        ("make = build()\n", True),
        ("for make in factories:\n    pass\n", True),
        ("with factory() as make:\n    pass\n", True),
        ("import make\n", True),
        ("from factories import make\n", True),
        ("from factories import *\n", True),
        ("globals()['make'] = build\n", True),
        ("if fast:\n    def make():\n        pass\n", True),
        ("from factories import make as build\n", False),
        ("def main():\n    return make\n", False),
        ("# def make():\nDOC = 'def make(): pass'\n", False),
    ],
)
def test_binds_the_factory(source: str, binds: bool) -> None:
    tree = parse(source)
    assert tree is not None and tree.binds("make") is binds


LOOP = "for x, y in loader:\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"


def _indented(text: str, by: str = "    ") -> str:
    return "".join(by + line + "\n" for line in text.splitlines())


@pytest.mark.parametrize(
    ("source", "said"),
    [
        (LOOP, "the loop at line 1 calls loss.backward() (line 3)"),
        ("while True:\n    scaler.scale(loss).backward()\n", "the loop at line 1 calls scaler.scale(loss).backward() (line 2)"),
        ("try:\n" + _indented(LOOP) + "except KeyboardInterrupt:\n    pass\n", "the loop at line 2 calls loss.backward() (line 4)"),
        ("def fit():\n" + _indented(LOOP) + "fit()\n", "line 6 calls fit(), whose loop at line 2 calls loss.backward() (line 4)"),
        ("def fit():\n" + _indented(LOOP) + "for epoch in range(3):\n    fit()\n", "line 7 calls fit(), whose loop at line 2"),
        ("if __name__ == '__main__':\n" + _indented(LOOP), None),
        ("def fit():\n" + _indented(LOOP) + "if __name__ == '__main__':\n    fit()\n", None),
        ("def fit():\n" + _indented(LOOP), None),
        ("for _ in range(3):\n    scheduler.step()\n", None),  # no backward(): not training
        ("# for x in loader: loss.backward()\nDOC = '''\n" + LOOP + "'''\n", None),
        ("class Trainer:\n    def fit(self):\n" + _indented(LOOP, "        "), None),
    ],
    ids=["loop", "while-scaled", "in-try", "called-function", "called-in-a-loop", "main-guard", "guarded-call",
         "defined-only", "scheduler-only", "comment-and-string", "method"],
)
def test_training_on_import(source: str, said: str | None) -> None:
    tree = parse(source)
    assert tree is not None
    found = tree.training_on_import()
    assert (found is None) if said is None else (found is not None and found.startswith(said)), found
