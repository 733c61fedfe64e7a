"""torchdoctor run."""
