"""The interface every log source implements (file:// and ssh:// alike), and all the ingest
knows of one."""

import threading
from collections.abc import Iterator
from typing import Protocol

from app.tailing.events import Event


class LogSource(Protocol):
    def follow(self, offset: int, identity: str | None, stop: threading.Event) -> Iterator[Event]:
        """Events from `offset` of the file `identity` names (None: whichever is there),
        reconnecting as needed, until `stop` is set."""
        ...
