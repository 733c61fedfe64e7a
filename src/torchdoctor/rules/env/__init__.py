"""Rules of the `env` category."""
