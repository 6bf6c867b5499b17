"""Time the owner's page of a 1,000-attempt campaign against a plain Jinja2 table of its rows.

    python bench/campaign_page.py [--attempts 1000] [--runs 7] [--database-url URL]

Seeds a SQLite file (or the empty database --database-url names) with one campaign of N
attempts (most eliminated with a verdict, crashes with sglang diagnoses and their 100
throughput figures, repeated root causes, three benchmark runs per measured attempt, a markdown
note on every third attempt, a few adoptions that moved the baseline), then, in-process and in
turns, `GET /campaigns/{id}` through the dashboard
  - first view after a start: nothing kept, every command parsed again;
  - cold: nothing of the page kept (as after a change to every card: the noise band), the
    process's parsed commands warm;
  - after one attempt changed, as a tailer changes one during a session: a batch of its log
    stored (its card rendered anew, the rest kept), or a benchmark figure added to another
    (its card and the head's chart rendered anew);
  - the same while the page is open somewhere: its live view's broadcaster has rendered
    the change (once, for every viewer) before the reload comes;
  - unchanged since the last view;
and the reference, a bare Starlette route that reads the same rows through the driver (each
attempt's id, title, status, verdict, root cause and mean figure) and renders them as one
Jinja2 `<table>`. Prints medians of wall and CPU time, the ratios, and the sizes. Where the
time goes: `py-spy record -f raw -o page.txt -- python bench/campaign_page.py` (the page is
served from worker threads, which cProfile in this thread does not see).
"""

import argparse
import contextlib
import functools
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jinja2 import Environment
from sqlmodel import select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app import flags, repo
from app.changes import record
from app.cli import prepare_database
from app.config import Settings
from app.db import session_scope
from app.diagnosis import diagnose_bytes
from app.models import Attempt, BaselineChange, Campaign, Measurement, Note, Status, TailState
from app.pages.campaign import campaign_view
from app.pages.campaign_renders import CampaignRenders
from app.tailing.status import TailStatus
from app.web import create_app

OWNER = "bench-owner-token-" + "x" * 24
CAUSES = 40  # distinct failures: the rest are repeats ("same root cause as")


def crash_log(index: int) -> bytes:
    """An sglang log of one attempt: 100 decode batches, a traceback, a KeyError."""
    return (
        "".join(
            f"[2026-02-27 13:22:{i % 60:02d} TP0] Decode batch. #running-req: {i % 64}, "
            f"#token: {1000 + i}, token usage: 0.{i % 90 + 10}, gen throughput (token/s): "
            f"{80 + (i + index) % 15}.{i % 100:02d}, #queue-req: 0\n"
            for i in range(100)
        )
        + "[2026-02-27 13:23:41 TP3] Scheduler hit an exception: "
        "Traceback (most recent call last):\n"
        + "".join(
            f'  File "/sgl/python/sglang/srt/layer_{i}.py", line {100 + index}, in f{i}\n'
            f"    out = self.layer_{i}(x, positions, forward_batch)\n"
            for i in range(8)
        )
        + f"KeyError: {index}\n"
    ).encode()


def status_of(index: int) -> Status:
    """Mostly dead ends, as a long campaign is: 70 % eliminated, 4 % adopted."""
    slot = index % 50
    if slot < 35:
        return Status.eliminated
    if slot < 37:
        return Status.adopted
    return [Status.crashed, Status.measured, Status.running, Status.proposed][slot % 4]


def seed(settings: Settings, attempts: int) -> tuple[int, int, int]:
    """The campaign's id, a measured attempt's (more figures can be added to it) and a
    running one's, whose log is followed."""
    prepare_database(settings)  # create_app leaves migrations to `serve`'s start-up
    app = create_app(settings)
    diagnoses = [diagnose_bytes(crash_log(i)).to_dict() for i in range(CAUSES)]
    with session_scope(app.state.engine) as session:
        campaign = Campaign(name="EAGLE-3 on 8x RTX PRO 6000", baseline=82.0, target=120.0,
                            description="Speculative decoding over PCIe, 8 GPUs")  # fmt: skip
        session.add(campaign)
        session.flush()
        assert campaign.id is not None
        session.add(BaselineChange(campaign_id=campaign.id, value=82.0))
        for index in range(attempts):
            status = status_of(index)
            crashed = status in (Status.crashed, Status.eliminated) and index % 3 == 0
            diagnosis = diagnoses[index % CAUSES] if crashed else None
            attempt = Attempt(
                campaign_id=campaign.id, title=f"Try {index}: NCCL tree, chunk {index * 64}",
                hypothesis="Tree all-reduce beats Ring for the verify pass's small messages",
                command=f"python -m sglang.launch_server --tp 8 --chunked-prefill-size {index}",
                flags=f"--tp 8 --chunk {index}", status=status,
                verdict=f"Dead end: no gain at chunk {index * 64}"
                if status == Status.eliminated else None,
                diagnosis=diagnosis, fingerprint=diagnosis["fingerprint"] if diagnosis else None,
            )  # fmt: skip
            session.add(attempt)
            session.flush()
            assert attempt.id is not None
            if not crashed and status not in (Status.running, Status.proposed):
                for run in range(3):
                    value = 80.0 + index % 23 + run * 0.3 + (status == Status.adopted) * 6
                    session.add(Measurement(attempt_id=attempt.id, value=value))
            if status == Status.adopted:
                value = 82.0 + index / 100
                session.add(
                    BaselineChange(campaign_id=campaign.id, value=value, attempt_id=attempt.id)
                )
            if status == Status.running:
                size = 1 << 20
                session.add(TailState(attempt_id=attempt.id, source=f"file:///logs/{index}.log",
                                      state=TailStatus.connected, offset=size, size=size,
                                      stored_bytes=size))  # fmt: skip
            if index % 3 == 0:
                body = f"Dead end: **chunk {index}** hits `KeyError`; see the log"
                session.add(Note(campaign_id=campaign.id, attempt_id=attempt.id, body=body))
        session.add(Note(campaign_id=campaign.id, body="PCIe only: *no NVLink* on this box"))
        campaign_id = campaign.id
        measured, followed = (
            session.exec(
                select(Attempt.id).where(
                    Attempt.campaign_id == campaign_id, Attempt.status == status
                )
            ).first()
            for status in (Status.measured, Status.running)
        )
    app.state.engine.dispose()
    assert measured is not None and followed is not None, "--attempts: 40 or more"
    return campaign_id, measured, followed


TABLE = Environment(autoescape=True).from_string(
    """<!doctype html><html><head><title>{{ name }}</title></head><body><table>
<tr><th>#</th><th>title</th><th>status</th><th>mean</th><th>root cause</th><th>verdict</th></tr>
{% for r in rows %}<tr><td><a href="/attempts/{{ r[0] }}">#{{ r[0] }}</a></td><td>{{ r[1] }}</td>
<td>{{ r[2] }}</td><td>{{ "%.1f" | format(r[5]) if r[5] is not none else "" }}</td>
<td><code>{{ r[4] or "" }}</code></td><td>{{ r[3] or "" }}</td></tr>
{% endfor %}</table></body></html>"""
)
ROWS = """SELECT a.id, a.title, a.status, a.verdict, {root_cause},
  (SELECT avg(value) FROM measurement m WHERE m.attempt_id = a.id)
  FROM attempt a WHERE a.campaign_id = {mark} ORDER BY a.id DESC"""
NAME = "SELECT name FROM campaign WHERE id = {mark}"


def reference_app(url: str) -> Starlette:
    """The floor: the same rows, one query straight through the driver, one plain template.
    SQLite: a connection per request, as cheap as a file's open; PostgreSQL: one connection
    kept (a new one is a process started on the server)."""
    if url.startswith("sqlite"):
        path = url.removeprefix("sqlite:///")
        sql = {"root_cause": "json_extract(a.diagnosis, '$.root_cause')", "mark": "?"}
        connect: Callable[[], Any] = lambda: contextlib.closing(sqlite3.connect(path))  # noqa: E731
    else:
        import psycopg

        kept = psycopg.connect(url.replace("+psycopg", ""), autocommit=True)
        sql = {"root_cause": "a.diagnosis->>'root_cause'", "mark": "%s"}
        connect = lambda: contextlib.nullcontext(kept)  # noqa: E731
    rows_sql, name_sql = ROWS.format(**sql), NAME.format(**sql)

    def table(request: Request) -> HTMLResponse:
        with connect() as db:
            campaign_id = int(request.path_params["campaign_id"])
            (name,) = db.execute(name_sql, (campaign_id,)).fetchone()
            rows = db.execute(rows_sql, (campaign_id,)).fetchall()
        return HTMLResponse(TABLE.render(name=name, rows=rows))

    return Starlette(routes=[Route("/table/{campaign_id:int}", table)])


def timed(client: TestClient, url: str) -> tuple[float, float, str]:
    """Wall and CPU seconds (the process's, the server's thread and the client's): on a
    shared machine the CPU time is the steadier figure."""
    started, cpu = time.perf_counter(), time.process_time()
    response = client.get(url, headers={"Accept": "text/html"})
    elapsed, used = time.perf_counter() - started, time.process_time() - cpu
    assert response.status_code == 200, response.text[:300]
    return elapsed, used, response.text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attempts", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--database-url", default=None,
                        help="a database to seed and read, PostgreSQL's say (postgresql+psycopg:"
                        "//...); default: a SQLite file of its own")  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or f"sqlite:///{Path(tmp) / 'bench.db'}"
        settings = Settings(_env_file=None, database_url=url, token=OWNER)  # type: ignore[call-arg]
        campaign_id, measured_id, followed_id = seed(settings, args.attempts)
        dashboard = create_app(settings)
        dashboard.state.auth.refresh()  # the lifespan's first step: the token it accepts
        app = TestClient(dashboard)  # no lifespan: nothing is tailed
        assert app.get(f"/login?token={OWNER}", follow_redirects=False).status_code == 303
        reference = TestClient(reference_app(url))
        page_url, table_url = f"/campaigns/{campaign_id}", f"/table/{campaign_id}"
        owner = {"Authorization": f"Bearer {OWNER}"}
        figure_url = f"/api/attempts/{measured_id}/measurements"

        def forget(*, parsed: bool = False) -> None:
            """Nothing of the page kept; `parsed`: nor the commands parsed, the flag values
            masked (the process's own caches), as after a start."""
            dashboard.state.campaign_renders = CampaignRenders(dashboard.state.templates)
            if parsed:
                flags._command_flags.cache_clear()
                flags._masked_text.cache_clear()

        def log_batch() -> None:
            """What the ingest commits for a batch of a followed log (but the chunk)."""
            with session_scope(dashboard.state.engine) as session:
                tail = repo.tail_state(session, attempt_id=followed_id)
                assert tail is not None
                start = tail.stored_bytes
                tail.offset = tail.size = tail.stored_bytes = start + 4096
                session.add(tail)
                record(session, campaign_id, "log", attempt_id=followed_id,
                       start_offset=start, end_offset=tail.stored_bytes)  # fmt: skip

        def watched(change: Callable[[], None]) -> None:
            """The change, then its rendering by the page's live view (as when the page is
            open somewhere: its broadcaster renders each change once, in a worker thread)."""
            live = campaign_view(dashboard.state.campaign_renders, campaign_id)
            memory: dict[str, Any] = {}
            with session_scope(dashboard.state.engine, snapshot=True) as session:
                live.prime(session, memory)
                cursor = repo.newest_event_id(session, campaign_id)
            change()
            with session_scope(dashboard.state.engine, snapshot=True) as session:
                events = repo.events_after(session, campaign_id, cursor, None)
                assert events and live(session, events, memory)

        def add_figure(run: int) -> None:
            posted = app.post(figure_url, json={"value": 90.0 + run / 10}, headers=owner)
            assert posted.status_code == 201, posted.text

        labels = {"first": "first view after a start", "cold": "cold, nothing kept",
                  "logged": "after a log batch of one", "figure": "after a figure for one",
                  "watched": "the same, page open", "same": "unchanged"}  # fmt: skip
        wall: dict[str, list[float]] = {kind: [] for kind in ("table", *labels)}
        cpu: dict[str, list[float]] = {kind: [] for kind in ("table", *labels)}
        for run in range(args.runs + 1):  # in turns: a neighbour's load falls on all alike
            taken = {}
            forget(parsed=True)
            taken["first"] = timed(app, page_url)
            forget()
            taken["cold"] = timed(app, page_url)
            log_batch()
            taken["logged"] = timed(app, page_url)
            add_figure(run)
            taken["figure"] = timed(app, page_url)
            watched(functools.partial(add_figure, run))
            taken["watched"] = timed(app, page_url)
            taken["same"] = timed(app, page_url)
            taken["table"] = timed(reference, table_url)
            if run:  # the first warms templates and caches
                for kind, (wall_s, cpu_s, _) in taken.items():
                    wall[kind].append(wall_s)
                    cpu[kind].append(cpu_s)
        ms = {kind: statistics.median(values) * 1000 for kind, values in wall.items()}
        cpu_ms = {kind: statistics.median(values) * 1000 for kind, values in cpu.items()}
        size = {kind: len(html) >> 10 for kind, (_, _, html) in taken.items()}
        print(f"{args.attempts} attempts, medians of {args.runs} runs, wall (CPU), goal: within 2x")
        print(f"  plain Jinja2 table (reference)                 {ms['table']:7.1f} ms "
              f"({cpu_ms['table']:6.1f})  {size['table']:5d} KiB")  # fmt: skip
        for kind, label in labels.items():
            print(f"  GET {page_url}, {label:25s} {ms[kind]:7.1f} ms ({cpu_ms[kind]:6.1f})"
                  f"  {size[kind]:5d} KiB  {ms[kind] / ms['table']:5.2f}x"
                  f" ({cpu_ms[kind] / cpu_ms['table']:5.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
