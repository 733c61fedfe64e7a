"""Rules of the `compile` category."""
