"""Rules of the `dtype` category."""
