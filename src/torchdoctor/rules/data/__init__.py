"""Rules of the `data` category."""
