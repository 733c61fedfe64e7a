"""`python -m torchdoctor` is the `torchdoctor` command."""

from torchdoctor.cli import main

raise SystemExit(main())
