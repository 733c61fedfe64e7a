"""Rules of the `performance` category."""
