"""`GET /api/attempts/{id}/log` streams the stored log from the database a few chunks at a
time: the same bytes as the log, slices and dropped middles included. (Its memory stays
bounded: bench/visitors.py measures it on a 200 MB log.)"""

import hashlib
from pathlib import Path

import httpx
import pytest

from app.config import Settings
from app.db import make_engine, session_scope
from app.repo import STREAM_ROWS, stored_log
from tests.conftest import running
from tests.helpers import make_attempt, make_campaign, tail_of, wait_for

# Stored chunks are bytea there, read in batches: the database decides.
pytestmark = pytest.mark.both_databases


def write_log(path: Path, mib: int) -> bytes:
    """Lines that differ (zlib cannot hide a misplaced chunk), ending with a newline."""
    lines, size, number = [], 0, 0
    while size < mib << 20:
        digest = hashlib.sha256(str(number).encode()).hexdigest()
        line = f"[2026-02-27 13:21:{number % 60:02d} TP0] Decode batch {number} {digest}\n"
        lines.append(line)
        size += len(line)
        number += 1
    data = "".join(lines).encode()
    path.write_bytes(data)
    return data


def stored(api: httpx.Client, attempt_id: int, size: int) -> None:
    wait_for(
        lambda: tail_of(api, attempt_id).get("stored_bytes") == size,
        timeout=120,
        what=f"{size} bytes stored",
    )


def test_the_log_streams_byte_for_byte(settings: Settings, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    data = write_log(log, 24)  # about 24 chunks: several queries of STREAM_ROWS
    with running(settings) as (_, api):
        campaign = make_campaign(api)
        attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
        stored(api, attempt["id"], len(data))
        with api.stream("GET", f"/api/attempts/{attempt['id']}/log") as response:
            assert response.status_code == 200
            # Streamed: no length known ahead, the body comes in pieces.
            assert "content-length" not in response.headers
            assert response.headers["transfer-encoding"] == "chunked"
            pieces = list(response.iter_raw())
        assert len(pieces) > STREAM_ROWS
        body = b"".join(pieces)
        assert hashlib.sha256(body).hexdigest() == hashlib.sha256(data).hexdigest()
        assert response.headers["x-log-size"] == str(len(data))
        assert response.headers["x-next-offset"] == str(len(data))
        for offset, limit in [
            (0, 10), (1 << 20, 3 << 20), ((1 << 20) - 7, 14), (len(data) - 5, 100),
            (len(data), 10), (len(data) + 10, None), (5, None), (12345, 0),
        ]:  # fmt: skip
            params = {"offset": offset} | ({"limit": limit} if limit is not None else {})
            part = api.get(f"/api/attempts/{attempt['id']}/log", params=params)
            end = len(data) if limit is None else offset + limit
            assert part.content == data[offset:end], (offset, limit)
            assert part.headers["x-next-offset"] == str(max(offset, min(end, len(data))))


def test_a_log_with_its_middle_dropped_streams_as_stored(
    settings: Settings, tmp_path: Path
) -> None:
    log = tmp_path / "long.log"
    data = write_log(log, 16)
    capped = settings.model_copy(update={"log_cap_mib": 4.0})
    with running(capped) as (_, api):
        campaign = make_campaign(api)
        attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
        wait_for(
            lambda: tail_of(api, attempt["id"]).get("bytes_read") == len(data),
            timeout=120,
            what="the whole file read",
        )
        streamed = api.get(f"/api/attempts/{attempt['id']}/log").content
        assert b"bytes of the middle dropped past the cap]" in streamed
        assert streamed.startswith(data[: 1 << 20]) and streamed.endswith(data[-(1 << 20) :])
        engine = make_engine(capped.database_url)
        try:
            for offset, limit in [(0, None), (3 << 20, None), (100, 9 << 20), (7 << 20, 1 << 20)]:
                params = {"offset": offset} | ({"limit": limit} if limit is not None else {})
                part = api.get(f"/api/attempts/{attempt['id']}/log", params=params).content
                with session_scope(engine) as session:
                    whole = stored_log(session, attempt["id"], offset, limit)
                assert part == whole, (offset, limit)
        finally:
            engine.dispose()
