"""Tools for torchdoctor's contributors (`python -m torchdoctor.dev new-rule ...`); not used at run time."""
