"""Rules of the `loss` category."""
