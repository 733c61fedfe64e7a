"""Rules of the `device` category."""
