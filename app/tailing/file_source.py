"""file:///abs/path: the follower run in-process."""

import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from app.tailing import follower
from app.tailing.events import Event, State, from_follower
from app.tailing.status import TailStatus


def own_file(path: str, st: os.stat_result | None, protected: Sequence[Path]) -> str | None:
    """Why `path` is one of the dashboard's own files (its database, its secrets), however
    the path reaches it (a symlink, a hard link, `..`), or None."""
    real = os.path.realpath(path)
    for own in protected:
        try:
            same = st is not None and os.path.samestat(os.stat(own), st)
        except OSError:
            same = False
        if same or real == os.path.realpath(own):
            return f"{path} is one of the dashboard's own files: it is never served as a log"
    return None


def refusal(path: str, protected: Sequence[Path] = ()) -> str | None:
    """Why a file:// path may not be a log source, or None. A file not there yet is fine
    (the tail waits for it), unless it is a pseudo-file or one of the dashboard's own."""
    try:
        st: os.stat_result | None = os.stat(path)
    except OSError:
        st = None
    if st is not None:
        reason = follower.unfollowable(path, st)
        if reason:
            return reason
    real = os.path.realpath(path)
    for root in follower.PSEUDO_ROOTS:
        if real == root or real.startswith(root + "/"):
            return f"{path} is a kernel pseudo-file ({root}): it has no end to follow"
    return own_file(path, st, protected)


class FileSource:
    def __init__(self, path: str, protected: Sequence[Path] = ()) -> None:
        self.path = path
        self.protected = tuple(protected)

    def _refuse(self, path: str, st: os.stat_result) -> str | None:
        return own_file(path, st, self.protected)

    def follow(self, offset: int, identity: str | None, stop: threading.Event) -> Iterator[Event]:
        yield State(TailStatus.connected)
        for raw in follower.follow(self.path, offset, identity or "-", stop.is_set, self._refuse):
            yield from_follower(raw)
