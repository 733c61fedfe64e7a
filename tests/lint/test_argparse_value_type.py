"""TD564's facts, seen on this Python's argparse: what each flagged declaration does with a value
given on the command line."""

from __future__ import annotations

import argparse

import pytest


def parse(*arguments: str, **declaration: object) -> object:
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("--option", **declaration)  # type: ignore[arg-type]
    return parser.parse_args(list(arguments)).option


def test_type_bool_turns_the_option_on_for_false() -> None:
    assert parse("--option", "False", type=bool, default=False) is True
    assert parse("--option", "0", type=bool, default=False) is True


def test_without_type_a_number_given_arrives_as_text_and_the_default_as_a_number() -> None:
    assert parse("--option", "0.1", default=0.01) == "0.1"
    assert parse(default=0.01) == 0.01


def test_type_int_refuses_a_fraction_and_leaves_a_float_default_a_float() -> None:
    with pytest.raises(argparse.ArgumentError, match="invalid int value"):
        parse("--option", "0.1", type=int, default=0.0)
    assert isinstance(parse(type=int, default=0.0), float)
