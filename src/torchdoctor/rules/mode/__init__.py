"""Rules of the `mode` category."""
