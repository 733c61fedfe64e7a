"""An example torchdoctor plugin: `print()` inside a module's `forward` (TD998)."""
