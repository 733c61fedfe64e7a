"""Rules of the `api` category."""
