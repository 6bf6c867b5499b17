"""Queries of stored logs: the compressed chunks of each attempt's log, read back as bytes
(all at once or streamed), and the chunks the cap may drop."""

import zlib
from collections.abc import Iterator

from sqlalchemy import Engine, delete, func
from sqlmodel import Session, col, select

from app.db import session_scope
from app.models import LogChunk, Measurement, TailEvent
from app.repo.ids import MAX_OFFSET

LogRow = tuple[int, int, bytes]  # a stored chunk: stream offset, length, compressed bytes
STREAM_ROWS = 4  # chunks per query when streaming a log: each holds at most a batch (1 MiB)


def _log_rows(
    session: Session, attempt_id: int, offset: int, end: int | None, *,
    after: int | None = None, rows: int | None = None,
) -> list[LogRow]:  # fmt: skip
    query = select(LogChunk.stream_offset, LogChunk.length, LogChunk.data).where(
        LogChunk.attempt_id == attempt_id,
        col(LogChunk.stream_offset) + col(LogChunk.length) > offset,
    )
    if end is not None:
        query = query.where(col(LogChunk.stream_offset) < end)
    if after is not None:
        query = query.where(col(LogChunk.stream_offset) > after)
    query = query.order_by(col(LogChunk.stream_offset)).limit(rows)
    return [(row[0], row[1], row[2]) for row in session.exec(query)]


class _LogSlicer:
    """Cuts stored chunks, in order, to the bytes [offset, end) of the log, and marks where
    the middle was dropped past the cap."""

    def __init__(self, offset: int, end: int | None) -> None:
        self.offset, self.end = offset, end
        self.position = offset
        self.started = False

    def pieces(self, row: LogRow) -> Iterator[bytes]:
        stream_offset, length, compressed = row
        if stream_offset > self.position and self.started:
            gap = stream_offset - self.position
            yield b"\n[campaign-dash: %d bytes of the middle dropped past the cap]\n" % gap
        data = zlib.decompress(compressed)
        start = max(0, self.offset - stream_offset)
        stop = len(data) if self.end is None else min(len(data), self.end - stream_offset)
        self.started = True
        self.position = stream_offset + length
        yield data[start:stop]


def _end_of(offset: int, limit: int | None) -> int | None:
    return None if limit is None else min(offset + limit, MAX_OFFSET)


def stored_log(
    session: Session, attempt_id: int, offset: int = 0, limit: int | None = None
) -> bytes:
    """The stored bytes of an attempt's log from `offset` (stream offsets), at most `limit`."""
    end = _end_of(offset, limit)
    slicer = _LogSlicer(offset, end)
    rows = _log_rows(session, attempt_id, offset, end)
    return b"".join(piece for row in rows for piece in slicer.pieces(row))


def stream_stored_log(
    engine: Engine, attempt_id: int, offset: int = 0, limit: int | None = None
) -> Iterator[bytes]:
    """The same bytes as `stored_log`, a few chunks per query, each query in a transaction
    of its own: a 200 MB log is never in memory, and a slow reader holds no connection."""
    end = _end_of(offset, limit)
    slicer = _LogSlicer(offset, end)
    after = None
    while True:
        with session_scope(engine, snapshot=True) as session:
            rows = _log_rows(session, attempt_id, offset, end, after=after, rows=STREAM_ROWS)
        for row in rows:
            yield from slicer.pieces(row)
        if len(rows) < STREAM_ROWS:
            return
        after = rows[-1][0]


def log_chunks(session: Session, *, attempt_id: int) -> Iterator[LogChunk]:
    """Every stored chunk of the log, in order (a restart feeds them to the diagnosis)."""
    query = (
        select(LogChunk)
        .where(LogChunk.attempt_id == attempt_id)
        .order_by(col(LogChunk.stream_offset))
    )
    yield from session.exec(query)


def forget_log(session: Session, *, attempt_id: int) -> None:
    """The stored log of an attempt given another source, and what was read of it: its
    chunks, its rotations, the figures its lines gave (figures typed or benchmarked stay)."""
    session.execute(delete(LogChunk).where(col(LogChunk.attempt_id) == attempt_id))
    session.execute(delete(TailEvent).where(col(TailEvent.attempt_id) == attempt_id))
    session.execute(
        delete(Measurement).where(
            col(Measurement.attempt_id) == attempt_id, col(Measurement.log_offset).is_not(None)
        )
    )


def add_log_chunk(session: Session, *, attempt_id: int, stream_offset: int, data: bytes) -> None:
    session.add(
        LogChunk(
            attempt_id=attempt_id,
            stream_offset=stream_offset,
            length=len(data),
            data=zlib.compress(data, 1),  # fast: the tail thread compresses as it reads
        )
    )


def kept_log_bytes(session: Session, *, attempt_id: int) -> int:
    query = select(func.coalesce(func.sum(LogChunk.length), 0)).where(
        LogChunk.attempt_id == attempt_id
    )
    return int(session.exec(query).one())


def middle_chunks(
    session: Session, *, attempt_id: int, head_end: int, tail_start: int
) -> list[LogChunk]:
    """The chunks wholly between the kept head and the kept tail, oldest first."""
    query = (
        select(LogChunk)
        .where(
            LogChunk.attempt_id == attempt_id,
            col(LogChunk.stream_offset) >= head_end,
            col(LogChunk.stream_offset) + col(LogChunk.length) <= tail_start,
        )
        .order_by(col(LogChunk.stream_offset))
    )
    return list(session.exec(query))
