"""torchdoctor dist."""
