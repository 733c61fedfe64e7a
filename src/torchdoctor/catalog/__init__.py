"""`torchdoctor rules` and `torchdoctor rule CODE`: the rule catalogue for people and tools."""
