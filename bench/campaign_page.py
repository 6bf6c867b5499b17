"""Time the owner's page of a 1,000-attempt campaign against a plain Jinja2 table of its rows.

    python bench/campaign_page.py [--attempts 1000] [--runs 7] [--profile]

Seeds a SQLite file with one campaign of N attempts (most eliminated with a verdict, crashes
with sglang diagnoses and their 100 throughput figures, repeated root causes, three benchmark
runs per measured attempt, a markdown note on every third attempt, a few adoptions that moved
the baseline), then, in-process and in turns: `GET /campaigns/{id}` through the dashboard, and
the reference, a bare Starlette route that reads the same rows with sqlite3 (each attempt's id,
title, status, verdict, root cause and mean figure) and renders them as one Jinja2 `<table>`.
Prints medians, the ratio, and the page's size. `--profile` prints where the page's time goes.
"""

import argparse
import cProfile
import pstats
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from jinja2 import Environment
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app.config import Settings
from app.db import session_scope
from app.diagnosis import diagnose_bytes
from app.models import Attempt, BaselineChange, Campaign, Measurement, Note, Status
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


def seed(settings: Settings, attempts: int) -> int:
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
            if index % 3 == 0:
                body = f"Dead end: **chunk {index}** hits `KeyError`; see the log"
                session.add(Note(campaign_id=campaign.id, attempt_id=attempt.id, body=body))
        session.add(Note(campaign_id=campaign.id, body="PCIe only: *no NVLink* on this box"))
        campaign_id = campaign.id
    app.state.engine.dispose()
    return campaign_id


TABLE = Environment(autoescape=True).from_string(
    """<!doctype html><html><head><title>{{ name }}</title></head><body><table>
<tr><th>#</th><th>title</th><th>status</th><th>mean</th><th>root cause</th><th>verdict</th></tr>
{% for r in rows %}<tr><td><a href="/attempts/{{ r[0] }}">#{{ r[0] }}</a></td><td>{{ r[1] }}</td>
<td>{{ r[2] }}</td><td>{{ "%.1f" | format(r[5]) if r[5] is not none else "" }}</td>
<td><code>{{ r[4] or "" }}</code></td><td>{{ r[3] or "" }}</td></tr>
{% endfor %}</table></body></html>"""
)
ROWS = """SELECT a.id, a.title, a.status, a.verdict, json_extract(a.diagnosis, '$.root_cause'),
  (SELECT avg(value) FROM measurement m WHERE m.attempt_id = a.id)
  FROM attempt a WHERE a.campaign_id = ? ORDER BY a.id DESC"""


def reference_app(path: Path) -> Starlette:
    """The floor: the same rows, one query, one plain template."""

    def table(request: Request) -> HTMLResponse:
        with sqlite3.connect(path) as db:
            campaign_id = int(request.path_params["campaign_id"])
            query = "SELECT name FROM campaign WHERE id = ?"
            (name,) = db.execute(query, (campaign_id,)).fetchone()
            rows = db.execute(ROWS, (campaign_id,)).fetchall()
        return HTMLResponse(TABLE.render(name=name, rows=rows))

    return Starlette(routes=[Route("/table/{campaign_id:int}", table)])


def timed(client: TestClient, url: str) -> tuple[float, str]:
    started = time.perf_counter()
    response = client.get(url, headers={"Accept": "text/html"})
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.text[:300]
    return elapsed, response.text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attempts", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="where the page's time goes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        settings = Settings(_env_file=None, database_url=f"sqlite:///{path}", token=OWNER)  # type: ignore[call-arg]
        campaign_id = seed(settings, args.attempts)
        app = TestClient(create_app(settings))  # no lifespan: nothing is tailed
        assert app.get(f"/login?token={OWNER}", follow_redirects=False).status_code == 303
        reference = TestClient(reference_app(path))
        page_url, table_url = f"/campaigns/{campaign_id}", f"/table/{campaign_id}"
        owner = {"Authorization": f"Bearer {OWNER}"}
        note_url = f"/api/campaigns/{campaign_id}/notes"
        times: dict[str, list[float]] = {"table": [], "changed": [], "same": []}
        for run in range(args.runs + 1):  # in turns: a neighbour's load falls on all alike
            # A change (a note, as a teammate adds one) comes first: the page after it is
            # rendered anew; the page again, with nothing changed, is the one rendering reused.
            posted = app.post(note_url, json={"body": f"run {run}"}, headers=owner)
            assert posted.status_code == 201, posted.text
            changed_s, page = timed(app, page_url)
            same_s, _ = timed(app, page_url)
            table_s, table = timed(reference, table_url)
            if run:  # the first warms templates and caches
                times["changed"].append(changed_s)
                times["same"].append(same_s)
                times["table"].append(table_s)
        ms = {kind: statistics.median(values) * 1000 for kind, values in times.items()}
        print(f"{args.attempts} attempts, medians of {args.runs} runs:")
        print(
            f"  plain Jinja2 table (reference)     {ms['table']:7.1f} ms  {len(table) >> 10:5d} KiB"
        )
        print(f"  GET {page_url}, after a change  {ms['changed']:7.1f} ms  {len(page) >> 10:5d} KiB"
              f"  {ms['changed'] / ms['table']:5.2f}x")  # fmt: skip
        print(f"  GET {page_url}, unchanged       {ms['same']:7.1f} ms"
              f"             {ms['same'] / ms['table']:5.2f}x  (goal: within 2x)")  # fmt: skip
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(3):
                timed(app, page_url)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
