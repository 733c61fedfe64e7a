"""torchdoctor env."""
