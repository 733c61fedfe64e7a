"""Rules of the `memory` category."""
