"""torchdoctor check."""
