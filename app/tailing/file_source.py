"""file:///abs/path: the follower run in-process."""

import threading
from collections.abc import Iterator
from typing import Any

from app.tailing import follower
from app.tailing.events import Data, Event, Idle, Opened, Rotated, State


def translate(raw: tuple[Any, ...]) -> Event:
    """A follower event (tuple, as framed on the wire) as a typed event."""
    kind = raw[0]
    if kind == "D":
        return Data(int(raw[1]), raw[2])
    if kind == "H":
        return Idle(int(raw[1]))
    if kind == "I":
        return Opened(str(raw[1]), int(raw[2]))
    if kind == "R":
        return Rotated(str(raw[1]), "rotated")
    if kind == "T":
        return Rotated(str(raw[1]) if len(raw) > 1 else None, "truncated")
    if kind == "W":
        return State("file not found yet", "waiting for the file to appear")
    errno, message = int(raw[1]), str(raw[2])
    state = "permission denied" if errno == 13 else "error"
    return State(state, message)


class FileSource:
    def __init__(self, path: str) -> None:
        self.path = path

    def follow(self, offset: int, identity: str | None, stop: threading.Event) -> Iterator[Event]:
        yield State("connected")
        for raw in follower.follow(self.path, offset, identity or "-", stop.is_set):
            yield translate(raw)
