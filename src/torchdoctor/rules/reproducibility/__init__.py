"""Rules of the `reproducibility` category."""
