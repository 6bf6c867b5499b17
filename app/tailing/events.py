"""What a source reports while it follows a log, and the follower's frames as those events."""

from dataclasses import dataclass
from typing import Any

from app.tailing.status import TailStatus


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
class Writer:
    """After the file was quiet a while: whether a process still holds it open for writing
    (None: the follower cannot tell: no /proc, or the writer may be a user it cannot see)."""

    open: bool | None


@dataclass(frozen=True)
class State:
    """Where the connection stands: connecting, connected, file not found yet, reconnecting..."""

    state: TailStatus
    message: str | None = None
    retry_in: float | None = None
    host_key: str | None = None  # "type base64" of a key that is not trusted yet
    known_host_key: str | None = None  # "type SHA256:..." of the different key on record
    infrastructure: bool = False  # the host or the network failed, not the server


Event = Opened | Data | Rotated | Idle | Writer | State


def from_follower(frame: tuple[Any, ...]) -> Event:
    """A follower event (a tuple, as framed on the wire) as a typed event."""
    kind = frame[0]
    if kind == "D":
        return Data(int(frame[1]), frame[2])
    if kind == "H":
        return Idle(int(frame[1]))
    if kind == "I":
        return Opened(str(frame[1]), int(frame[2]))
    if kind == "R":
        return Rotated(str(frame[1]), "rotated")
    if kind == "T":
        return Rotated(str(frame[1]) if len(frame) > 1 else None, "truncated")
    if kind == "O":
        return Writer(frame[1])
    if kind == "W":
        return State(TailStatus.file_not_found, "waiting for the file to appear")
    if kind == "N":
        return State(TailStatus.not_a_log, str(frame[1]))
    errno, message = int(frame[1]), str(frame[2])
    state = TailStatus.permission_denied if errno == 13 else TailStatus.error
    return State(state, message)
