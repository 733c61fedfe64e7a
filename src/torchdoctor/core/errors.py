"""Errors that end a command with exit status 2 and one line on stderr."""

from __future__ import annotations


class UsageError(Exception):
    """Bad arguments or input the tool cannot work with: what, which, and what to do."""
