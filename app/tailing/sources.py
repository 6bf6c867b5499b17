"""Parse a log source URL into the source that follows it."""

import re
from dataclasses import dataclass

from app.tailing.status import TailStatus


class BadSource(ValueError):
    pass


class HostUnavailable(Exception):
    """A host could not be asked: `state` as a tail would show it ("host key not trusted",
    "host unreachable"...), the message says why."""

    def __init__(self, state: TailStatus, message: str, *, lasting: bool = False) -> None:
        self.state = state
        # Waiting will not mend it (a host name no resolver knows): a run gives up at once.
        self.lasting = lasting
        super().__init__(message)


# What a host name or ~/.ssh/config alias is made of. The name reaches a shell: paramiko runs
# `Match exec` lines through one with %h replaced by it, as OpenSSH does after its own
# valid_hostname() check, so anything a shell splits or expands on (whitespace, control
# characters, quotes, $, `, ;, &, |, <, >, (, ), {, }, *, ?, ~, %...) is refused outright.
# A leading "-" would read as an option to a command that takes the name as an argument.
_HOST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,252}")
_USER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")


def _check_name(kind: str, pattern: re.Pattern[str], name: str) -> str:
    if not pattern.fullmatch(name):
        raise BadSource(
            f"not a {kind} name: {name!r} (letters, digits, '.', '-' and '_' only, "
            "not starting with '-' or '.')"
        )
    return name


def check_host_name(host: str) -> str:
    """`host` if OpenSSH and a shell would both take it as one plain name; BadSource otherwise."""
    return _check_name("host", _HOST_NAME, host)


def check_user_name(user: str) -> str:
    return _check_name("user", _USER_NAME, user)


@dataclass(frozen=True)
class SourceURL:
    scheme: str  # "file" or "ssh"
    path: str
    host: str | None = None
    user: str | None = None
    port: int | None = None

    @property
    def host_label(self) -> str:
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{user}{self.host}{port}"


def parse_source(url: str) -> SourceURL:
    """`ssh://[user@]host[:port]/abs/path` or `file:///abs/path`; the path is taken literally."""
    if url.startswith("file://"):
        path = url[len("file://") :]
        if path.startswith("localhost/"):  # RFC 8089's other spelling of this machine
            path = path[len("localhost") :]
        if not path.startswith("/"):
            host = path.split("/", 1)[0]
            raise BadSource(
                "a file source needs an absolute path on this machine: file:///abs/path"
                + (f" (a file on {host}: ssh://{host}/abs/path)" if host else "")
            )
        return SourceURL("file", path)
    if url.startswith("ssh://"):
        rest = url[len("ssh://") :]
        slash = rest.find("/")
        if slash <= 0:
            raise BadSource("an ssh source is ssh://[user@]host[:port]/abs/path")
        netloc, path = rest[:slash], rest[slash:]
        user, at, hostport = netloc.rpartition("@")
        host, _, port_text = hostport.partition(":")
        check_host_name(host)
        if at:
            check_user_name(user)
        port = None
        if port_text:
            if not port_text.isdigit() or not 0 < int(port_text) < 65536:
                raise BadSource(f"not a port: {port_text!r}")
            port = int(port_text)
        return SourceURL("ssh", path, host=host, user=user or None, port=port)
    raise BadSource("a log source is ssh://[user@]host[:port]/abs/path or file:///abs/path")
