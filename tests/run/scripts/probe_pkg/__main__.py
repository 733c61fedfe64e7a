"""Prints how it was run (as JSON), then exits with the status given as its first argument."""

import json
import os
import sys

print(json.dumps({
    "name": __name__,
    "file": __file__,
    "argv": sys.argv,
    "path": sys.path,
    "spec": __spec__.name if __spec__ is not None else None,
    "package": __package__,
    "cwd": os.getcwd(),
    "main_is_this": sys.modules["__main__"].__dict__ is globals(),
    "builtins": type(__builtins__).__name__,
    "stdin_isatty": sys.stdin.isatty() if sys.stdin else None,
}))
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 0)
