"""Rules of the `grad-flow` category."""
