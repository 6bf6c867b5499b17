"""Host keys: unknown or changed keys are refused (never added), and trusting one is the
owner's explicit action, written to the dashboard's own known_hosts."""

import base64
import hashlib
from pathlib import Path

import paramiko

from app.tailing.status import TailStatus


def fingerprint(key: paramiko.PKey) -> str:
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


class HostKeyNotTrusted(Exception):
    """The host offered `key`; `known` is the different key on record for it, if any."""

    def __init__(
        self, hostname: str, key: paramiko.PKey, known: paramiko.PKey | None = None
    ) -> None:
        self.hostname, self.key, self.known = hostname, key, known
        what = "changed" if known is not None else "not trusted"
        super().__init__(f"host key {what}: {key.get_name()} {fingerprint(key)}")

    @property
    def key_line(self) -> str:
        """The offered key as known_hosts spells it after the host name: "type base64"."""
        return f"{self.key.get_name()} {self.key.get_base64()}"


class RefuseAndRemember(paramiko.MissingHostKeyPolicy):
    """paramiko's policy for an unknown key: refuse it, keeping it for the owner to trust."""

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        raise HostKeyNotTrusted(hostname, key)


def host_key_refusal(error: HostKeyNotTrusted) -> tuple[TailStatus, str, str | None]:
    """The state, the sentence and the known key's fingerprint of a refused host key."""
    offered = f"{error.key.get_name()} {fingerprint(error.key)}"
    if error.known is None:
        return TailStatus.host_key_not_trusted, f"host key not trusted ({offered})", None
    known = f"{error.known.get_name()} {fingerprint(error.known)}"
    message = f"host key changed: the host now offers {offered}, known until now as {known}"
    return TailStatus.host_key_changed, message, known


def trust_host_key(trusted_hosts_file: Path, known_hosts_name: str, key_line: str) -> None:
    """Write an offered host key into the dashboard's own known_hosts (an owner's action),
    in place of any key it held for that host name, and for that name only. The file is
    read before ~/.ssh/known_hosts, so a replaced key overrides an old one kept there
    (that file is the user's: the dashboard never writes it)."""
    path = trusted_hosts_file
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = [
        line
        for line in (path.read_text().splitlines() if path.is_file() else [])
        if line.split(" ", 1)[0] != known_hosts_name
    ]
    kept.append(f"{known_hosts_name} {key_line.strip()}")
    # Written whole and renamed: a tail reading the file meanwhile sees the old or the new.
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text("\n".join(kept) + "\n")
    temporary.replace(path)
