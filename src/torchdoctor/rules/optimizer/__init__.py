"""Rules of the `optimizer` category."""
