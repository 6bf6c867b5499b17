"""Ingest: an attempt's log from its source into the database, one transaction per batch.

Each transaction holds the new offset and file identity, the stored log bytes, the
diagnosis, status changes and measurements read from the log; a restart resumes from
what was committed and re-reads the stored log into the diagnosis engine, so nothing is
lost or doubled.
"""

import logging
import threading
import time
import zlib
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session

from app import alerts, lifecycle, repo
from app.changes import record
from app.db import TAIL_LOCK_SPACE, Held, session_scope, try_exclusive
from app.diagnosis import Diagnoser, Diagnosis, Throughput
from app.environment import EnvironmentReader
from app.errors import StorageFull
from app.flags import ArgsLineFinder, parse_logged_args
from app.lifecycle import Actor, Refusal
from app.logbytes import not_text
from app.models import (
    Attempt,
    Measurement,
    Status,
    TailEvent,
    TailState,
    utcnow,
)
from app.pauses import Pauses, pause_message
from app.tailing.events import Data, Event, Idle, Opened, Rotated, State, Writer
from app.tailing.protocol import LogSource
from app.tailing.status import TailStatus

log = logging.getLogger(__name__)

BATCH_BYTES = 1 << 20
PRUNE_EVERY = 500  # commits
KEEP_EVENTS = 20_000
DIAGNOSIS_WINDOW = 256 << 10  # bytes kept around the root cause when the middle is dropped
MAX_STORED_FIGURES = 500
# A batch the full disk refused is tried again after this, doubling up to the most: space
# freed is taken within PAUSE_MAX_S, and a disk full for hours costs a try that often. Each
# try reads the stored log again first (up to the cap): a try waits at least REPLAY_GAP
# times as long as that took, so a paused tail keeps a core busy a tenth of the time at most.
PAUSE_FIRST_S = 0.5
PAUSE_MAX_S = 4.0
REPLAY_GAP = 10


def diagnosis_for_storage(result: Diagnosis) -> dict[str, Any]:
    body = result.to_dict()
    figures = body["throughput"]
    body["throughput_total"] = len(figures)
    if len(figures) > MAX_STORED_FIGURES:
        # The first figures and the latest say the story; thousands of periodic ones do not.
        body["throughput"] = figures[:100] + figures[-(MAX_STORED_FIGURES - 100) :]
    return body


WRITER_GONE = "the log ends after an error and no process holds it open for writing any more"
WRITER_LEFT = "a process still holds the log open for writing: the server is still up"


def crashed_by_the_end(result: Diagnosis, writer_open: bool | None) -> tuple[bool, str] | None:
    """`crashed` and why, where the log alone cannot say (the engine's None, or an error with
    no fatal end, as a warning before a hang): how the log ended decides, as the source saw
    it once the file fell quiet. None: the engine's word stands (it found a crash, found no
    failure, or nothing can tell whether a writer is left)."""
    if result.crashed is True or result.root_cause is None or writer_open is None:
        return None
    return (True, WRITER_GONE) if writer_open is False else (False, WRITER_LEFT)


def _seen(tail: TailState) -> tuple[Any, ...]:
    """What a page shows of a tail."""
    return (
        tail.offset,
        tail.file_identity,
        tail.size,
        tail.stored_bytes,
        tail.state,
        tail.last_error,
        tail.host_key,
    )


def _same_state(tail: TailState, event: State) -> bool:
    return (tail.state, tail.last_error, tail.host_key) == (
        event.state,
        event.message,
        event.host_key,
    )


NOT_TEXT = "binary data, not a text log (a compressed rotation? give the log it unpacks to)"


class AttemptTail:
    """Follows one attempt's source in a thread until stopped."""

    def __init__(
        self,
        engine: Engine,
        attempt_id: int,
        source: LogSource,
        *,
        stall_after_s: float,
        log_cap_bytes: int = 512 << 20,
        pauses: Pauses | None = None,
    ) -> None:
        self.engine = engine
        self.pauses = pauses or Pauses()
        self.campaign_id = 0
        self._commits = 0
        self.log_cap_bytes = log_cap_bytes
        self.attempt_id = attempt_id
        self.source = source
        self.stall_after_s = stall_after_s
        self._refused: set[str] = set()
        self.stop_event = threading.Event()
        # The source's last word on a writer, since the last byte (None: none, or unknown).
        self.writer_open: bool | None = None
        self.args_finder = ArgsLineFinder()  # fed with the diagnosis, restored with it
        self.environment = EnvironmentReader()  # the same
        self.args_taken: str | None = None  # the line last parsed into the attempt
        self.thread = threading.Thread(target=self._run, name=f"tail-{attempt_id}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self.stop_event.set()
        if self.thread.is_alive() and threading.current_thread() is not self.thread:
            self.thread.join(timeout)

    # --- the loop ------------------------------------------------------------------

    def _run(self) -> None:
        lock = self._exclusive()
        if lock is None:
            return
        try:
            while not self.stop_event.is_set():
                try:
                    self._follow()
                    return
                except StorageFull:  # starting, with no room for the tail's row: no batch yet
                    log.warning("attempt %s: the database's disk is full; waiting", self.attempt_id)
                    self.stop_event.wait(PAUSE_MAX_S)
                except Exception:  # a database hiccup must not end the tail for good
                    log.exception("tail of attempt %s failed; resuming", self.attempt_id)
                    self.stop_event.wait(2.0)
        finally:
            lock.close()

    def _exclusive(self) -> Held | None:
        """Several dashboards on one database: one of them follows each attempt (a lock
        held while following), another takes over if it goes away. None: stopped first."""
        url = self.engine.url.render_as_string(hide_password=False)
        while not self.stop_event.is_set():
            lock = try_exclusive(url, TAIL_LOCK_SPACE, self.attempt_id)
            if lock is not None:
                return lock
            self.stop_event.wait(5.0)
        return None

    def _resume(self) -> tuple[TailState, Diagnoser, str | None]:
        with session_scope(self.engine) as session:
            attempt = repo.get_attempt(session, attempt_id=self.attempt_id)
            assert attempt is not None and attempt.source is not None
            campaign = repo.get_campaign(session, campaign_id=attempt.campaign_id)
            self.campaign_id = attempt.campaign_id
            tail = repo.tail_state(session, attempt_id=self.attempt_id)
            if tail is None or tail.source != attempt.source:
                if tail is not None:
                    session.delete(tail)
                    session.flush()
                tail = TailState(attempt_id=self.attempt_id, source=attempt.source)
                session.add(tail)
            diagnoser, stored = self._replay(session, campaign.ready_pattern if campaign else None)
            if stored != tail.stored_bytes:
                tail.stored_bytes = stored
            metric_label = campaign.metric_label if campaign else ""
        return tail, diagnoser, metric_label

    def _replay(self, session: Session, ready_pattern: str | None) -> tuple[Diagnoser, int]:
        """The diagnosis and the arguments' line of the stored log, read afresh from the
        database, and where the stored log ends."""
        diagnoser = Diagnoser(ready_pattern)
        self.args_finder = ArgsLineFinder()
        self.args_taken = None
        self.environment = EnvironmentReader()
        stored = 0
        for chunk in repo.log_chunks(session, attempt_id=self.attempt_id):
            diagnoser.skip(chunk.stream_offset - stored)  # a middle dropped past the cap
            data = zlib.decompress(chunk.data)
            diagnoser.feed(data)
            if chunk.stream_offset > stored:
                self.args_finder.skip()
            self.args_finder.feed(data)
            self.environment.feed(data)
            stored = chunk.stream_offset + chunk.length
        return diagnoser, stored

    def _follow(self) -> None:
        tail, diagnoser, metric_label = self._resume()
        offset, identity = tail.offset, tail.file_identity
        last_data_at = time.monotonic()
        stall_noted = False  # once per silence: a ready server's stall is not applied
        batch: list[Event] = []
        batch_bytes = 0
        text_checked = tail.stored_bytes > 0
        for event in self.source.follow(offset, identity, self.stop_event):
            if isinstance(event, Data):
                if not text_checked and event.data.strip(b"\0"):
                    # A log's first bytes say whether it is text: a compressed rotation or a
                    # core file is refused, as `diagnose` refuses it, not stored as a log.
                    text_checked = True
                    if not_text(event.data):
                        if tail.state != TailStatus.not_a_log:
                            said = State(TailStatus.not_a_log, NOT_TEXT)
                            self._store([*batch, said], diagnoser, metric_label)
                        return
                # Exactly once: drop what overlaps bytes already taken.
                if event.offset + len(event.data) <= offset:
                    continue
                if event.offset < offset:
                    event = Data(offset, event.data[offset - event.offset :])
                offset = event.offset + len(event.data)
                batch.append(event)
                batch_bytes += len(event.data)
                last_data_at = time.monotonic()
                stall_noted = False
                if batch_bytes < BATCH_BYTES:
                    continue
            elif isinstance(event, Rotated):
                offset = 0
                batch.append(event)
            elif isinstance(event, Idle) and not batch:
                stalled = time.monotonic() - last_data_at > self.stall_after_s
                stalled = stalled and not stall_noted and tail.state != TailStatus.stalled
                if event.size == tail.size and not stalled:
                    continue  # nothing new to say
                batch.append(State(TailStatus.stalled) if stalled else event)
                if stalled:
                    stall_noted = True
                    batch.append(Idle(event.size))
            elif isinstance(event, State) and not batch and _same_state(tail, event):
                # A missing file is reported twice a second, a refused one every 5 s:
                # written (and sent to every page) once, when it changes.
                continue
            else:
                batch.append(event)
            if not any(isinstance(e, (Data, Rotated, Opened)) for e in batch):
                # Notes alone (the size, a writer left, a state) are said again later: a full
                # disk drops them rather than hold the log's next bytes behind them.
                noted = self._note(batch, diagnoser, metric_label)
                if noted is not None:
                    tail = noted
                elif any(isinstance(e, State) and e.state == TailStatus.stalled for e in batch):
                    stall_noted = False  # (said again at the next look at the silence)
                batch = []
                continue
            stored = self._store(batch, diagnoser, metric_label)
            if stored is None:
                return  # stopped while the disk was full: the next start reads the batch again
            tail, diagnoser = stored
            batch, batch_bytes = [], 0
        if batch:
            self._store(batch, diagnoser, metric_label)

    # --- a full disk ---------------------------------------------------------------------

    def _note(
        self, batch: list[Event], diagnoser: Diagnoser, metric_label: str | None
    ) -> TailState | None:
        """Commit notes that hold no log bytes; None: the disk is full and they are dropped."""
        try:
            return self._commit(batch, diagnoser, metric_label)
        except StorageFull:
            log.debug("attempt %s: the database's disk is full; notes dropped: %s",
                      self.attempt_id, batch)  # fmt: skip
            return None

    def _store(
        self, batch: list[Event], diagnoser: Diagnoser, metric_label: str | None
    ) -> tuple[TailState, Diagnoser] | None:
        """Commit the batch. While the database's disk is full the batch is held, and the
        source not read meanwhile (the stored offset stays at the last byte stored: nothing
        is skipped), the tail is shown paused, and the batch is tried again after a bounded
        backoff. None: stopped before it could be stored."""
        delay = PAUSE_FIRST_S
        paused = noted = False
        try:
            while True:
                try:
                    return self._commit(batch, diagnoser, metric_label), diagnoser
                except StorageFull:
                    pass
                waiting = sum(len(event.data) for event in batch if isinstance(event, Data))
                if not paused:
                    log.warning("attempt %s: the database's disk is full; %d bytes wait to be "
                                "stored", self.attempt_id, waiting)  # fmt: skip
                    paused = True
                self.pauses.hold(self.campaign_id, self.attempt_id, waiting)
                noted = noted or self._note_pause(waiting)
                if self.stop_event.wait(delay):
                    return None
                # The refused transaction fed the batch to the diagnosis: read it afresh from
                # what is stored, so the batch is fed once, when it is stored.
                started = time.monotonic()
                diagnoser = self._replayed()
                replay_s = time.monotonic() - started
                delay = max(min(delay * 2, PAUSE_MAX_S), REPLAY_GAP * replay_s)
        finally:
            # Stored (after the commit, whose pages still showed the pause: this redraws them),
            # stopped, or failed otherwise.
            self.pauses.end(self.campaign_id, self.attempt_id)

    def _replayed(self) -> Diagnoser:
        with session_scope(self.engine) as session:
            campaign = repo.get_campaign(session, campaign_id=self.campaign_id)
            return self._replay(session, campaign.ready_pattern if campaign else None)[0]

    def _note_pause(self, waiting: int) -> bool:
        """Say on the tail that it is paused, and what waits; False: no room even for that
        (the next try says it again)."""
        try:
            with session_scope(self.engine) as session:
                tail = repo.tail_state(session, attempt_id=self.attempt_id)
                if tail is None:
                    return True
                tail.state, tail.last_error = TailStatus.disk_full, pause_message(waiting)
                tail.updated_at = utcnow()
                session.add(tail)
                record(session, self.campaign_id, "attempt", attempt_id=self.attempt_id)
        except StorageFull:
            return False
        return True

    # --- one transaction ---------------------------------------------------------------

    def _commit(
        self, batch: list[Event], diagnoser: Diagnoser, metric_label: str | None
    ) -> TailState:
        with session_scope(self.engine) as session:
            tail = repo.tail_state(session, attempt_id=self.attempt_id)
            attempt = repo.get_attempt(session, attempt_id=self.attempt_id)
            assert tail is not None and attempt is not None
            if attempt.source != tail.source:
                # The owner gave the attempt another log: these bytes are no longer its own,
                # and the tailer follows the new one.
                self.stop_event.set()
                return tail
            fed = environment_read = False
            stored_before = tail.stored_bytes
            seen_before = _seen(tail)
            pending: list[bytes] = []
            if tail.state == TailStatus.disk_full:  # this commit has room: the pause is over
                tail.state, tail.last_error = TailStatus.connected, None

            def flush_chunk() -> None:
                if pending:
                    data = b"".join(pending)
                    repo.add_log_chunk(session, attempt_id=self.attempt_id,
                                       stream_offset=tail.stored_bytes, data=data)  # fmt: skip
                    tail.stored_bytes += len(data)
                    pending.clear()

            for event in batch:
                if isinstance(event, Writer):
                    self.writer_open = event.open
                elif isinstance(event, Data):
                    self.writer_open = None  # said of the file before these bytes
                    pending.append(event.data)
                    diagnoser.feed(event.data)
                    self.args_finder.feed(event.data)
                    environment_read |= self.environment.feed(event.data)
                    tail.offset = event.offset + len(event.data)
                    fed = True
                    if tail.state not in (TailStatus.connected, TailStatus.catching_up):
                        tail.state, tail.last_error = TailStatus.connected, None
                elif isinstance(event, Rotated):
                    flush_chunk()
                    session.add(
                        TailEvent(
                            attempt_id=self.attempt_id,
                            kind=event.reason,
                            detail=event.identity or "",
                            stream_offset=tail.stored_bytes,
                        )
                    )
                    tail.offset = 0
                    if event.identity:
                        tail.file_identity = event.identity
                elif isinstance(event, Opened):
                    tail.file_identity, tail.size = event.identity, event.size
                    tail.state, tail.last_error, tail.host_key = TailStatus.connected, None, None
                    tail.known_host_key = None
                elif isinstance(event, Idle):
                    tail.size = event.size
                    if tail.state == TailStatus.catching_up:
                        tail.state = TailStatus.connected
                elif isinstance(event, State):
                    if event.state == TailStatus.stalled and attempt.status != Status.running:
                        continue  # a ready server may well be quiet
                    if event.state == TailStatus.stalled:
                        alerts.queue(session, attempt, "stalled")
                    tail.state, tail.last_error = event.state, event.message
                    tail.host_key, tail.known_host_key = event.host_key, event.known_host_key
            flush_chunk()
            if environment_read:
                found = self.environment.environment.as_json()
                if found != attempt.environment:
                    attempt.environment = found
            line = self.args_finder.line
            if fed and line is not None and line != self.args_taken:
                self.args_taken = line
                logged = parse_logged_args(line)
                stored = logged.to_json() if logged else None
                if stored is not None and stored != attempt.logged_args:
                    attempt.logged_args = stored
            if tail.stored_bytes > stored_before:
                record(session, self.campaign_id, "log", attempt_id=self.attempt_id,
                       start_offset=stored_before, end_offset=tail.stored_bytes)  # fmt: skip
            judged_before = (attempt.status, (attempt.diagnosis or {}).get("crashed"))
            if fed or any(isinstance(event, Writer) for event in batch):
                result = diagnoser.diagnosis()
                figures = diagnoser.settled_throughput(metric_label) if metric_label else []
                self._apply_diagnosis(session, attempt, result, figures)
                if fed and tail.stored_bytes > self.log_cap_bytes:
                    self._drop_middle(session, tail, result)
            judged = (attempt.status, (attempt.diagnosis or {}).get("crashed")) != judged_before
            connected = tail.state == TailStatus.connected
            if tail.size is not None and tail.offset < tail.size and connected:
                tail.state = TailStatus.catching_up
            if fed or judged or _seen(tail) != seen_before:
                # Pages hear of a change, never of a heartbeat that changed nothing.
                record(session, self.campaign_id, "attempt", attempt_id=self.attempt_id)
            self._commits += 1
            if self._commits % PRUNE_EVERY == 0:
                repo.prune_live_events(session, campaign_id=self.campaign_id, keep=KEEP_EVENTS)
            tail.updated_at = utcnow()
            session.add(tail)
        return tail

    def _drop_middle(self, session: Session, tail: TailState, result: Diagnosis) -> None:
        """Past the cap: drop the oldest chunks between the head and the tail, keeping the
        diagnosis windows (where the root cause and the readiness line are)."""
        kept = repo.kept_log_bytes(session, attempt_id=self.attempt_id)
        if kept <= self.log_cap_bytes:
            return
        head_end = self.log_cap_bytes // 4
        tail_start = tail.stored_bytes - self.log_cap_bytes // 2
        windows = [
            (finding.offset - DIAGNOSIS_WINDOW, finding.offset + DIAGNOSIS_WINDOW)
            for finding in (result.root_cause_at, result.ready_at)
            if finding is not None
        ]
        candidates = repo.middle_chunks(
            session, attempt_id=self.attempt_id, head_end=head_end, tail_start=tail_start
        )
        dropped_from, dropped = None, 0
        for chunk in candidates:
            if kept <= self.log_cap_bytes * 0.9:
                break
            end = chunk.stream_offset + chunk.length
            if any(start < end and chunk.stream_offset < stop for start, stop in windows):
                continue
            dropped_from = chunk.stream_offset if dropped_from is None else dropped_from
            dropped += chunk.length
            kept -= chunk.length
            session.delete(chunk)
        if dropped:
            session.add(
                TailEvent(
                    attempt_id=self.attempt_id,
                    kind="dropped",
                    detail=f"{dropped} bytes of the middle, past the {self.log_cap_bytes} B cap",
                    stream_offset=dropped_from or 0,
                )
            )

    def _apply_diagnosis(
        self, session: Session, attempt: Attempt, result: Diagnosis, figures: list[Throughput]
    ) -> None:
        """`figures`: the log's settled figures of the campaign's metric label, in log order;
        the ones past the last taken become measurements."""
        crashed_before = bool(attempt.diagnosis and attempt.diagnosis.get("crashed"))
        ended = crashed_by_the_end(result, self.writer_open)
        crashed = result.crashed if ended is None else ended[0]
        attempt.diagnosis = diagnosis_for_storage(result)
        if ended is not None:
            attempt.diagnosis |= {"crashed": crashed, "crashed_reason": ended[1]}
        attempt.fingerprint = result.fingerprint
        current = Status(attempt.status)
        # What the log says, whatever the attempt's status; the lifecycle decides.
        wanted = current
        if current == Status.crashed and crashed_before and not crashed and result.ready:
            # The engine served on after what read as fatal (a request failing): the crash
            # this log's diagnosis declared is withdrawn.
            measured = repo.count_measurements(session, attempt_id=self.attempt_id)
            wanted = Status.measured if measured else Status.ready
        if figures:
            # Only when the log has benchmark figures: most commits need no query here.
            last_taken = repo.last_measured_offset(session, attempt_id=self.attempt_id)
            for figure in figures:
                if last_taken is None or figure.offset > last_taken:
                    session.add(
                        Measurement(
                            attempt_id=attempt.id or 0, value=figure.value, log_offset=figure.offset
                        )
                    )
                    if wanted != Status.crashed:  # only the withdrawal above lifts a crash
                        wanted = Status.measured
        if result.ready and wanted == Status.running:
            wanted = Status.ready
        if crashed and wanted != Status.measured:
            wanted = Status.crashed  # a server measured before it died keeps its figures
        attempt.updated_at = utcnow()
        session.add(attempt)
        outcome = lifecycle.apply(session, attempt, wanted, by=Actor.ingest)
        if isinstance(outcome, Refusal) and outcome.message not in self._refused:
            # Closed by the owner, or waiting on another attempt: the owner's word stands.
            # Said once: the diagnosis says the same on every commit that follows.
            self._refused.add(outcome.message)
            log.info("attempt %s stays %s: %s", attempt.id, outcome.current, outcome.message)
