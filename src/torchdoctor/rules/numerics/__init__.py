"""Rules of the `numerics` category."""
