"""Rules of the `distributed` category."""
