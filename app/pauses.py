"""Tails paused because the database's disk is full, as this dashboard holds them: with no
room even to store the pause, what the API and the pages show of a tail is laid over with it,
and each change to it is announced (`on_change`: the live bus), since no event row can be."""

import threading
from collections.abc import Callable, Mapping


def pause_message(waiting: int) -> str:
    """`tail.last_error` of a tail paused by a full disk (its state says "disk full")."""
    return (
        f"disk full: {waiting} bytes waiting to be stored; kept, and stored as soon as the "
        "dashboard's database has space again"
    )


class Pauses:
    """Attempt id → bytes read from its log that wait for room in the database; safe across
    threads (the tails write, requests read)."""

    def __init__(self, on_change: Callable[[int, int], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[int, int] = {}
        self._on_change = on_change  # (campaign id, attempt id), outside the lock

    def hold(self, campaign_id: int, attempt_id: int, waiting: int) -> None:
        with self._lock:
            changed = self._waiting.get(attempt_id) != waiting
            self._waiting[attempt_id] = waiting
        if changed and self._on_change is not None:
            self._on_change(campaign_id, attempt_id)

    def end(self, campaign_id: int, attempt_id: int) -> None:
        with self._lock:
            held = self._waiting.pop(attempt_id, None) is not None
        if held and self._on_change is not None:
            self._on_change(campaign_id, attempt_id)

    def waiting(self) -> Mapping[int, int]:
        """A copy: a request reads one moment of it."""
        with self._lock:
            return dict(self._waiting)
