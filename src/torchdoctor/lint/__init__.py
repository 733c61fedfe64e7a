"""torchdoctor lint."""
