"""Logging set-up for uvicorn: secrets in URLs (login and share tokens) never reach the log,
however the request spells them: `?TOKEN=`, `?%74oken=`, `/s/<token>`, `/api/shares/<token>`,
a share path inside `?next=`."""

import copy
import logging
from typing import Any
from urllib.parse import unquote_plus

from uvicorn.config import LOGGING_CONFIG

REDACTED = "[redacted]"
# A path segment after one of these is a share token.
_TOKEN_BEFORE = ("s", "shares")


def redact_path(path: str) -> str:
    """Share tokens in a path, its suffix kept: `/s/[redacted].md`."""
    segments = path.split("/")
    for index in range(1, len(segments)):
        before = unquote_plus(segments[index - 1]).lower()
        is_share = before == "shares" or (before == "s" and index == 2)
        if is_share and segments[index]:
            _, dot, suffix = segments[index].partition(".")
            segments[index] = REDACTED + dot + suffix
    return "/".join(segments)


def _redact_pair(pair: str) -> str:
    key, equals, value = pair.partition("=")
    if not equals:
        return pair
    if "token" in unquote_plus(key).lower():
        return f"{key}={REDACTED}"
    # `?next=/s/<token>`: a local path handed on, share token and all.
    decoded = unquote_plus(value)
    if decoded.startswith("/") and redact_path(decoded) != decoded:
        return f"{key}={redact_path(decoded)}"
    return pair


def redact_url(url: str) -> str:
    path, question, query = url.partition("?")
    path = redact_path(path)
    if not question:
        return path
    pairs = query.split("&")
    return f"{path}?{'&'.join(_redact_pair(pair) for pair in pairs)}"


class RedactSecrets(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact_url(a) if isinstance(a, str) else a for a in record.args)
        return True


def uvicorn_log_config() -> dict[str, Any]:
    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_secrets"] = {"()": "app.logs.RedactSecrets"}
    config["handlers"]["access"]["filters"] = ["redact_secrets"]
    return config
