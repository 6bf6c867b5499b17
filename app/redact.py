"""Masking for shared views: host names, IP addresses, user names and absolute paths.

A shared summary is pasted into team chats and issues; what it says about the failure
(`KeyError: 12`) must stay, where it happened (`root@10.1.230.174:/data/eagle3/...`) must not.
"""

import re
from collections.abc import Iterable

HOST = "[host]"
USER = "[user]"
IP = "[ip]"
PATH = "[path]"

_SCHEME = re.compile(r"\b(ssh|file)://(?:([^@/\s]+)@)?([^/:\s]+)?(?::(\d+))?(/\S*)?")
_USER_AT_HOST = re.compile(r"\b([A-Za-z_][\w.-]*)@([A-Za-z0-9][\w.-]*)")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9a-fA-F]{1,4}:){3,7}[0-9a-fA-F]{1,4}(?![\w:])")
# An absolute path of two or more parts; the last part (a file name) is kept.
_ABS_PATH = re.compile(r"(?<![\w.~/])(/(?:[\w.@+-]+/)+)([\w.@+-]*)")


class Redactor:
    def __init__(self, hosts: Iterable[str] = (), users: Iterable[str] = ()) -> None:
        self.hosts = sorted({h for h in hosts if h}, key=len, reverse=True)
        self.users = sorted({u for u in users if u}, key=len, reverse=True)
        names = [re.escape(n) for n in [*self.hosts, *self.users]]
        self._named = (
            re.compile(r"(?<![\w-])(" + "|".join(names) + r")(?![\w-])") if names else None
        )

    def __call__(self, text: str | None) -> str:
        if not text:
            return text or ""
        text = _SCHEME.sub(self._source, text)
        text = _USER_AT_HOST.sub(f"{USER}@{HOST}", text)
        text = _IPV6.sub(IP, text)
        text = _IPV4.sub(IP, text)
        text = _ABS_PATH.sub(lambda m: f"{PATH}/{m.group(2)}", text)
        if self._named is not None:
            text = self._named.sub(lambda m: HOST if m.group(1) in self.hosts else USER, text)
        return text

    @staticmethod
    def _source(match: re.Match[str]) -> str:
        scheme, path = match.group(1), match.group(5) or ""
        name = path.rsplit("/", 1)[-1]
        if scheme == "file":
            return f"file://{PATH}/{name}"
        user = f"{USER}@" if match.group(2) else ""
        return f"ssh://{user}{HOST}/{PATH}/{name}" if path else f"ssh://{user}{HOST}"


def no_redaction(text: str | None) -> str:
    return text or ""
