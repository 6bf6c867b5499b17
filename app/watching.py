"""Watched log folders: an engineer who launches by hand (`nohup python -m
sglang.launch_server ... > /data/logs/NAME.log 2>&1 &`) gets each new log of the folder as
an attempt, titled after the file and followed like any other. The first listing's files
are offered, not imported. A thread lists every watch twice a second (the folder's host
runs app/tailing/dir_listing.py); the database's unique (watch, name) makes each file one
attempt, whichever dashboard saw it first, across restarts and dropped connections."""

import contextlib
import logging
import posixpath
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from app import actions
from app.changes import record
from app.db import session_scope
from app.errors import Invalid, NotFound
from app.models import Watch, WatchedFile, utcnow
from app.schemas import AttemptCreate
from app.tailing import dir_listing
from app.tailing.factory import LogSources
from app.tailing.sources import BadSource, HostUnavailable, parse_source

log = logging.getLogger(__name__)

LISTING_CODE = Path(dir_listing.__file__).read_bytes()
POLL_S = 0.5
LISTERS = 4  # folders listed at once: one slow host holds one
MAX_ANSWER_BYTES = 1 << 20
GLOB = set("*?[")


@dataclass(frozen=True)
class Folder:
    """A watch's source split: the folder's URL and the file-name pattern."""

    url: str  # ssh://host/dir or file:///dir
    path: str
    pattern: str

    def file_source(self, name: str) -> str:
        return self.url + name if self.url.endswith("/") else f"{self.url}/{name}"


def parse_watch(source: str) -> Folder:
    """`ssh://[user@]host[:port]/abs/dir/*.log` or `file:///abs/dir/*.log`: a pattern only
    in the last part of the path."""
    source = source.strip()
    if "\x00" in source or "\n" in source or len(source) > 2000:
        raise Invalid("source: one line of at most 2000 characters")
    try:
        parsed = parse_source(source)
    except BadSource as error:
        raise Invalid(f"source: {error} (a folder and a pattern: /data/logs/*.log)") from None
    folder, pattern = posixpath.split(parsed.path)
    if not pattern or GLOB & set(folder):
        raise Invalid(
            "source: a folder and a file-name pattern after it, as ssh://gpubox/data/logs/*.log"
        )
    url = source[: len(source) - len(pattern)]
    # (the root's URL keeps its slash: "file:///" is a folder, "file:" is nothing)
    return Folder(url if folder in ("", "/") else url.rstrip("/"), folder or "/", pattern)


def create_watch(session: Session, campaign_id: int, source: str) -> Watch:
    actions.require_campaign(session, campaign_id)
    parse_watch(source)
    watch = Watch(campaign_id=campaign_id, source=source.strip())
    session.add(watch)
    session.flush()
    record(session, campaign_id, "campaign")
    return watch


def require_watch(session: Session, watch_id: int) -> Watch:
    watch = session.get(Watch, watch_id)
    if watch is None:
        raise NotFound(f"watch {watch_id} not found")
    return watch


def delete_watch(session: Session, watch_id: int) -> None:
    watch = require_watch(session, watch_id)
    session.delete(watch)
    record(session, watch.campaign_id, "campaign")


def watches_of(session: Session, campaign_id: int) -> list[tuple[Watch, list[str]]]:
    """The campaign's watches, each with the files it offers (there before it started)."""
    watches = session.exec(
        select(Watch).where(Watch.campaign_id == campaign_id).order_by(col(Watch.id))
    ).all()
    offers: dict[int, list[str]] = {w.id or 0: [] for w in watches}
    if offers:
        rows = session.exec(
            select(WatchedFile.watch_id, WatchedFile.name)
            .where(col(WatchedFile.watch_id).in_(offers), col(WatchedFile.offered))
            .where(col(WatchedFile.attempt_id).is_(None))
            .order_by(col(WatchedFile.id))
        ).all()
        for watch_id, name in rows:
            offers[watch_id].append(name)
    return [(w, offers[w.id or 0]) for w in watches]


def import_offered(session: Session, watch_id: int, name: str) -> int:
    """The owner takes an offered file: it becomes an attempt now."""
    watch = require_watch(session, watch_id)
    seen = session.exec(
        select(WatchedFile).where(WatchedFile.watch_id == watch_id, WatchedFile.name == name)
    ).first()
    if seen is None or not seen.offered:
        raise Invalid(f"{name!r} is not a file this watch offers")
    if seen.attempt_id is not None:
        raise Invalid(f"{name!r} is attempt #{seen.attempt_id} already")
    seen.attempt_id = _attempt_for(session, watch, name)
    session.add(seen)
    return seen.attempt_id


def _attempt_for(session: Session, watch: Watch, name: str) -> int:
    folder = parse_watch(watch.source)
    title = name.rsplit(".", 1)[0] if "." in name.strip(".") else name
    data = AttemptCreate(
        title=title[:200] or name[:200],
        hypothesis=f"Launched by hand; its log appeared in {folder.path}",
        source=folder.file_source(name),
    )
    attempt = actions.create_attempt(session, watch.campaign_id, data)
    assert attempt.id is not None
    return attempt.id


class Watcher:
    """Lists every watch of the database, imports what is new."""

    def __init__(self, engine: Engine, sources: LogSources) -> None:
        self.engine = engine
        self.sources = sources
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(LISTERS, thread_name_prefix="watch")
        self._busy: set[int] = set()
        self._failed: dict[int, str] = {}  # each watch's last unexpected failure, logged once
        self._lock = threading.Lock()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="watcher", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                with session_scope(self.engine) as session:
                    watches = [(w.id, w.source) for w in session.exec(select(Watch)).all()]
                for watch_id, source in watches:
                    assert watch_id is not None
                    with self._lock:
                        if watch_id in self._busy:
                            continue
                        self._busy.add(watch_id)
                    self._pool.submit(self._pass, watch_id, source)
            except Exception:
                log.exception("watched folders: a pass failed")
            self._wake.wait(POLL_S)
            self._wake.clear()

    def _pass(self, watch_id: int, source: str) -> None:
        try:
            listing = self.list(parse_watch(source))
            if not self._stop.is_set():
                take(self.engine, watch_id, listing)
        except Exception as error:
            # Said on the watch, where its owner looks, and in this log once, not every poll.
            failure = f"{type(error).__name__}: {error}"
            if self._failed.get(watch_id) != failure:
                self._failed[watch_id] = failure
                log.exception("watched folders: watch %s failed", watch_id)
            with contextlib.suppress(Exception):
                take(self.engine, watch_id, {"error": "listing failed", "message": failure})
        finally:
            with self._lock:
                self._busy.discard(watch_id)

    def list(self, folder: Folder) -> dict[str, Any]:
        """The folder's matching files, or {"error": ..., "message": ...}."""
        parsed = parse_source(folder.file_source(folder.pattern))
        if parsed.scheme == "file":
            return dir_listing.list_folder(folder.path, folder.pattern)
        try:
            result = self.sources.ssh(parsed).run_program(
                LISTING_CODE, [folder.path, folder.pattern], max_output=MAX_ANSWER_BYTES
            )
        except HostUnavailable as error:
            return {"error": str(error.state), "message": str(error)}
        except RuntimeError as error:  # the dashboard is stopping
            return {"error": "stopping", "message": str(error)}
        answer = result.answer()
        if answer is None:
            why = result.why_not("no answer it can read")
            return {"error": "error", "message": f"listing the folder failed: {why}"}
        return answer


def take(engine: Engine, watch_id: int, listing: dict[str, Any]) -> None:
    """What a listing found: the first one's files offered; later, each new one an
    attempt, oldest first, in a transaction of its own (another dashboard may take it)."""
    with session_scope(engine) as session:
        watch = session.get(Watch, watch_id)
        if watch is None:
            return
        if "error" in listing:
            message = f"{listing['error']}: {listing.get('message', '')}"[:500]
            if watch.last_error != message:
                watch.last_error = message
                session.add(watch)
                record(session, watch.campaign_id, "campaign")
            return
        seen = set(
            session.exec(select(WatchedFile.name).where(WatchedFile.watch_id == watch_id)).all()
        )
        first = watch.listed_at is None
        names = [f["name"] for f in listing.get("files", []) if f["name"] not in seen]
        changed = first or watch.last_error is not None
        watch.listed_at, watch.last_error = utcnow(), None
        session.add(watch)
        if first:
            session.add_all(WatchedFile(watch_id=watch_id, name=n, offered=True) for n in names)
        if changed:
            record(session, watch.campaign_id, "campaign")
    if first:
        return
    for name in names:
        try:
            with session_scope(engine) as session:
                watch = session.get(Watch, watch_id)
                if watch is None:
                    return
                attempt_id = _attempt_for(session, watch, name)
                session.add(WatchedFile(watch_id=watch_id, name=name, attempt_id=attempt_id))
        except IntegrityError:
            continue  # another dashboard took it first
