"""Secrets never leave the machine: values that look like credentials are replaced by `***`.

Reports go into bug trackers and CI logs, so redaction happens when facts are collected,
before any renderer (text, json, junit, sarif, github, html, --output) can see them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "***"

#: variable names that hold credentials (matched anywhere in the name)
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW(?:OR)?D|PASSPHRASE|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|AUTH|COOKIE"
    r"|SESSION|SIGNATURE|(?:^|_)KEY(?:$|_)|(?:^|_)PWD(?:$|_)",
    re.I,
)
#: `scheme://user:password@host` -> `scheme://user:***@host`
_URL_CREDENTIALS = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^/@\s:]+:)[^/@\s]+(?=@)", re.I)
#: well-known token formats (Hugging Face, GitHub, GitLab, OpenAI-style, Slack, AWS, W&B-style hex)
_TOKEN = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|glpat-[\w-]{16,}"
    r"|sk-[\w-]{16,}|xox[abprs]-[\w-]{10,}|AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16})\b"
)


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def redact_text(text: str) -> str:
    """Mask credentials inside free text: URL passwords and well-known token formats."""
    text = _URL_CREDENTIALS.sub(lambda m: m.group("head") + MASK, text)
    return _TOKEN.sub(MASK, text)


def redact_variable(name: str, value: str) -> str:
    """The value to show for environment variable `name`."""
    if is_secret_name(name) and value:
        return MASK
    return redact_text(value)


def redact_variables(variables: Mapping[str, str]) -> dict[str, str]:
    return {name: redact_variable(name, value) for name, value in variables.items()}
