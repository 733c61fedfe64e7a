"""Rules of the `grad-mode` category."""
