"""What a source reports while it follows a log."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Opened:
    # "dev:ino:length:crc32": which file (inode) and which content (its first bytes)
    identity: str
    size: int


@dataclass(frozen=True)
class Data:
    offset: int
    data: bytes


@dataclass(frozen=True)
class Rotated:
    identity: str | None  # the file now read; None: truncated in place, not yet known
    reason: str  # "rotated" or "truncated"


@dataclass(frozen=True)
class Idle:
    """Caught up with the file (a good moment to commit); its current size."""

    size: int


@dataclass(frozen=True)
class State:
    """Where the connection stands: connecting, connected, file not found yet, reconnecting..."""

    state: str
    message: str | None = None
    retry_in: float | None = None
    host_key: str | None = None  # "type base64" of a key that is not trusted yet
    known_host_key: str | None = None  # "type SHA256:..." of the different key on record
    infrastructure: bool = False  # the host or the network failed, not the server


Event = Opened | Data | Rotated | Idle | State
