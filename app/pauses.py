"""Tails paused because the database's disk is full, as this dashboard holds them: with no
room even to store the pause, what the API and the pages show of a tail is laid over with it."""

import threading
from collections.abc import Mapping


def pause_message(waiting: int) -> str:
    """`tail.last_error` of a tail paused by a full disk (its state says "disk full")."""
    return (
        f"disk full: {waiting} bytes waiting to be stored; kept, and stored as soon as the "
        "dashboard's database has space again"
    )


class Pauses:
    """Attempt id → bytes read from its log that wait for room in the database; safe across
    threads (the tails write, requests read)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[int, int] = {}

    def hold(self, attempt_id: int, waiting: int) -> None:
        with self._lock:
            self._waiting[attempt_id] = waiting

    def end(self, attempt_id: int) -> None:
        with self._lock:
            self._waiting.pop(attempt_id, None)

    def waiting(self) -> Mapping[int, int]:
        """A copy: a request reads one moment of it."""
        with self._lock:
            return dict(self._waiting)
