"""Logging set-up for uvicorn: secrets in URLs (login and share tokens) never reach the log,
however the request spells them: `?TOKEN=`, `?%74oken=`, `;token=` path parameters,
`/s/<token>`, `//s/<token>`, `/s//<token>`, `/api/shares/<token>`, a share path inside
`?next=`, and any run of characters shaped like a generated token wherever it sits."""

import copy
import logging
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote_plus

from uvicorn.config import LOGGING_CONFIG

REDACTED = "[redacted]"
# Generated tokens are url-safe base64 (share: 32 characters, owner: 43): a run this long
# that mixes cases or digits is taken for one wherever it is. Route words are shorter and
# a long plain word (a search for "flashinfer_allreduce_fusion") stays readable.
_TOKEN_SHAPED = re.compile(r"[A-Za-z0-9_-]{24,}")
_SEPARATORS = re.compile(r"([&;])")


def _segment_name(segment: str) -> str:
    """A path segment as a router would compare it: decoded, its `;params` dropped."""
    return unquote_plus(segment.partition(";")[0]).lower()


def _share_token_index(segments: list[str]) -> set[int]:
    """Where share tokens sit: after `shares` anywhere, and after `s` when that is the first
    segment once empty ones, `.` and `..` are resolved (`//s/x`, `/./s/x`, `/s//x` alike)."""
    found = set()
    resolved: list[str] = []
    after: str | None = None
    for index, segment in enumerate(segments):
        name = _segment_name(segment)
        if name in ("", "."):
            continue
        if after is not None:
            found.add(index)
            after = None
            continue
        if name == "..":
            if resolved:
                resolved.pop()
            continue
        if name == "shares" or (name == "s" and not resolved):
            after = name
        resolved.append(name)
    return found


def _redact_params(segment: str) -> str:
    """`/login;token=...`: path parameters are pairs as a query's are."""
    name, semicolon, params = segment.partition(";")
    if not semicolon:
        return segment
    return name + ";" + _redact_query(params)


def redact_path(path: str) -> str:
    """Share tokens in a path, its suffix kept: `/s/[redacted].md`."""
    segments = path.split("/")
    shares = _share_token_index(segments)
    for index, segment in enumerate(segments):
        if index in shares:
            _, dot, suffix = segment.partition(".")
            segments[index] = REDACTED + dot + suffix
        else:
            segments[index] = _redact_params(segment)
    return "/".join(segments)


def _redact_pair(pair: str) -> str:
    key, equals, value = pair.partition("=")
    if not equals:
        return pair
    if "token" in unquote_plus(key).lower():
        return f"{key}={REDACTED}"
    # `?next=/s/<token>`: a local path handed on, share token and all.
    decoded = unquote_plus(value)
    if decoded.startswith("/") and redact_url(decoded) != decoded:
        return f"{key}={redact_url(decoded)}"
    return pair


def _redact_query(query: str) -> str:
    # `;` too: some servers split pairs on it, and a token after it is a token all the same.
    return "".join(
        part if part in "&;" else _redact_pair(part) for part in _SEPARATORS.split(query)
    )


def _looks_generated(run: str) -> bool:
    kinds = (str.islower, str.isupper, str.isdigit)
    return sum(any(kind(c) for c in run) for kind in kinds) >= 2


def _redact_token_shaped(text: str) -> str:
    return _TOKEN_SHAPED.sub(
        lambda match: REDACTED if _looks_generated(match.group()) else match.group(), text
    )


def redact_url(url: str) -> str:
    path, question, query = url.partition("?")
    redacted = redact_path(path) + (question + _redact_query(query) if question else "")
    return _redact_token_shaped(redacted)


class RedactSecrets(logging.Filter):
    """Also hides the configured owner token, whatever its shape, wherever it appears."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets = [secret for secret in secrets if secret]

    def _redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return redact_url(text)

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(self._redact(a) if isinstance(a, str) else a for a in record.args)
        return True


def uvicorn_log_config(secrets: Iterable[str | None] = ()) -> dict[str, Any]:
    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_secrets"] = {
        "()": "app.logs.RedactSecrets",
        "secrets": [secret for secret in secrets if secret],
    }
    config["handlers"]["access"]["filters"] = ["redact_secrets"]
    return config
