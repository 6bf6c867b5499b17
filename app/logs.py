"""Logging set-up for uvicorn: secrets in URLs (login and share tokens) never reach the log."""

import copy
import logging
import re
from typing import Any

from uvicorn.config import LOGGING_CONFIG

_SECRET_IN_URL = re.compile(r"((?:[?&]token=)|(?:^/s/))[^&\s/.?]+")


def redact_url(path: str) -> str:
    return _SECRET_IN_URL.sub(r"\1[redacted]", path)


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
