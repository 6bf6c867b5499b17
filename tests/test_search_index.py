"""The search index of migration 0017, on each database: it follows every write (campaigns,
attempts, a root cause arriving, notes), serves the query, gives the scan's answers, takes
q as plain text, and the migration fills it from the rows already there and goes away."""

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic import command
from sqlalchemy import Engine, event, text
from sqlmodel import Session

from app import migrate, repo
from app.config import Settings
from app.db import make_engine
from app.migrate import SEARCH_TABLES
from app.repo.search import scan
from tests.helpers import make_attempt, make_campaign, patch
from tests.test_search import CRASH_LOG, crashed, search

pytestmark = pytest.mark.both_databases


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    made = make_engine(settings.database_url)
    yield made
    made.dispose()


def in_sync(engine: Engine) -> None:
    """SQLite: FTS5 checks each index against its content, row by row (a trigger that
    missed a write fails it). PostgreSQL maintains its indexes itself."""
    if engine.dialect.name != "sqlite":
        return
    with engine.connect() as connection:
        for table in SEARCH_TABLES:
            connection.execute(
                text(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
            )


def same_as_the_scan(engine: Engine, q: str) -> list[tuple[str, int]]:
    """The indexed answer, asserted equal to the scan's; as (kind, row id)."""
    with Session(engine) as session:
        indexed = repo.search(session, q=q)
        assert indexed == scan(session, q=q)
    return [(m.kind, m.row_id) for m in indexed]


def test_the_index_follows_every_write(api: httpx.Client, engine: Engine, tmp_path: Path) -> None:
    campaign = make_campaign(api, name="Kimi K2.5 zebrafish", description="quokka tuning")
    attempt = make_attempt(
        api, campaign["id"], title="Wombat fusion", hypothesis="the axolotl path is faster",
        command="python -m sglang.launch_server --cuda-graph-max-bs 96", flags="--narwhal-mode",
    )  # fmt: skip
    note = api.post(f"/api/attempts/{attempt['id']}/notes", json={"body": "pangolin note"})
    assert note.status_code == 201
    on_campaign = api.post(f"/api/campaigns/{campaign['id']}/notes", json={"body": "ibex memo"})
    assert on_campaign.status_code == 201
    in_sync(engine)
    a, n, c = attempt["id"], note.json()["id"], campaign["id"]
    assert same_as_the_scan(engine, "ZEBRAFISH") == [("campaign", c)]
    assert same_as_the_scan(engine, "quokka") == [("campaign", c)]
    for q in ("wombat", "AXOLOTL", "cuda-graph-max-bs 96", "narwhal"):
        assert same_as_the_scan(engine, q) == [("attempt", a)], q
    assert same_as_the_scan(engine, "pangolin") == [("note", n)]
    assert same_as_the_scan(engine, "ibex") == [("note", on_campaign.json()["id"])]

    # Updated: the old words leave the index, the new ones enter it.
    edited = api.patch(f"/api/campaigns/{c}", json={"name": "Kimi gecko", "description": "x"})
    assert edited.status_code == 200
    assert patch(
        api, a, title="Marmot fusion", hypothesis="h", command="c", flags="--tapir-mode",
        status="eliminated", verdict="dead end: the okapi kernel",
    ).status_code == 200  # fmt: skip
    assert api.patch(f"/api/notes/{n}", json={"body": "lemur note"}).status_code == 200
    in_sync(engine)
    for gone in ("zebrafish", "quokka", "wombat", "axolotl", "cuda-graph", "narwhal", "pangolin"):
        assert same_as_the_scan(engine, gone) == [], gone
    assert same_as_the_scan(engine, "GECKO") == [("campaign", c)]
    for q in ("marmot", "tapir", "okapi kernel"):
        assert same_as_the_scan(engine, q) == [("attempt", a)], q
    assert same_as_the_scan(engine, "lemur") == [("note", n)]

    # A root cause arrives in the diagnosis JSON, written by the ingest, not by a person.
    log = tmp_path / "crash.log"
    log.write_bytes(CRASH_LOG)
    diagnosed = crashed(api, c, log, title="symm-mem")
    in_sync(engine)
    assert same_as_the_scan(engine, "keyerror: 12") == [("attempt", diagnosed["id"])]

    # Deleted: a note, an attempt, then the campaign with what it still holds.
    assert api.delete(f"/api/notes/{n}").status_code == 204
    assert same_as_the_scan(engine, "lemur") == []
    assert api.delete(f"/api/attempts/{a}").status_code == 204
    assert same_as_the_scan(engine, "marmot") == []
    in_sync(engine)
    assert api.delete(f"/api/campaigns/{c}").status_code == 204
    in_sync(engine)
    for q in ("gecko", "keyerror", "ibex"):
        assert same_as_the_scan(engine, q) == [], q


def explained(engine: Engine, q: str) -> str:
    """The plans of the statements one search runs, as the database reads them."""
    statements: list[tuple[str, Any]] = []

    def keep(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
        if "LIKE" in statement:
            statements.append((statement, params))

    event.listen(engine, "before_cursor_execute", keep)
    try:
        with Session(engine) as session:
            repo.search(session, q=q)
    finally:
        event.remove(engine, "before_cursor_execute", keep)
    assert len(statements) >= 3
    plans = []
    with engine.connect() as connection:
        explain = "EXPLAIN QUERY PLAN " if engine.dialect.name == "sqlite" else "EXPLAIN "
        if engine.dialect.name != "sqlite":
            # A few rows: the planner would rightly read the table (or walk the primary key
            # for the newest notes); asked not to, it shows whether the index serves at all.
            connection.exec_driver_sql("SET enable_seqscan = off")
            connection.exec_driver_sql("SET enable_indexscan = off")
        for statement, params in statements:
            rows = connection.exec_driver_sql(explain + statement, params).all()
            plans.append("\n".join(str(tuple(row)) for row in rows))
    return "\n\n".join(plans)


def test_the_index_serves_the_query(api: httpx.Client, engine: Engine) -> None:
    campaign = make_campaign(api)
    make_attempt(api, campaign["id"], title="NCCL tree", command="--cuda-graph-max-bs 80")
    plan = explained(engine, "cuda-graph-max-bs")
    if engine.dialect.name == "sqlite":
        for table in SEARCH_TABLES:
            assert f"SCAN {table} VIRTUAL TABLE INDEX" in plan, plan
        # Attempts and notes are read in the index's order, newest first: LIMIT stops it.
        for statement in plan.split("\n\n")[1:]:
            assert "TEMP B-TREE" not in statement, statement
    else:
        for index in ("ix_campaign_search_trgm", "ix_attempt_title_trgm",
                      "ix_attempt_search_trgm", "ix_note_body_trgm"):  # fmt: skip
            assert f"Bitmap Index Scan on {index}" in plan, plan


def test_queries_shorter_than_a_trigram_still_find_their_rows(
    api: httpx.Client, engine: Engine
) -> None:
    campaign = make_campaign(api, name="Qwen3")
    tp = make_attempt(api, campaign["id"], title="TP 8", command="--tp 8")
    make_attempt(api, campaign["id"], title="pipeline parallel")
    note = api.post(f"/api/attempts/{tp['id']}/notes", json={"body": "Z"}).json()
    assert [h["attempt_id"] for h in search(api, "tp")] == [tp["id"]]
    assert [(h["kind"], h["attempt_id"]) for h in search(api, "z")] == [("note", tp["id"])]
    assert same_as_the_scan(engine, "Tp") == [("attempt", tp["id"])]
    assert same_as_the_scan(engine, "z") == [("note", note["id"])]
    assert same_as_the_scan(engine, "N3") == [("campaign", campaign["id"])]


def test_quotes_and_fts_syntax_are_plain_text(api: httpx.Client, engine: Engine) -> None:
    campaign = make_campaign(api, name="Syntax")
    titles = ['say "hi" twice', "NEAR(a b)", "fp8 OR bf16", "bf16", "prefix* wildcard",
              "it's here", 'one " quote', "col:umn ^start", "a AND b", "NOT this"]  # fmt: skip
    ids = {t: make_attempt(api, campaign["id"], title=t)["id"] for t in titles}
    expected = {
        '"hi"': ['say "hi" twice'], 'say "': ['say "hi" twice'], '" q': ['one " quote'],
        "NEAR(": ["NEAR(a b)"], "near(a b)": ["NEAR(a b)"], "8 OR b": ["fp8 OR bf16"],
        "prefix*": ["prefix* wildcard"], "x* w": ["prefix* wildcard"], "it's": ["it's here"],
        "col:umn": ["col:umn ^start"], "^start": ["col:umn ^start"], "a AND b": ["a AND b"],
        "NOT this": ["NOT this"], "bf16": ["bf16", "fp8 OR bf16"], '"': ['one " quote',
        'say "hi" twice'], '""': [], "*": ["prefix* wildcard"], "OR": ["fp8 OR bf16"],
        "fp8 OR": ["fp8 OR bf16"], "NEAR": ["NEAR(a b)"], "AND": ["a AND b"],
    }  # fmt: skip
    for q, found in expected.items():
        hits = search(api, q)
        assert [h["attempt_id"] for h in hits] == [ids[t] for t in found], q
        assert same_as_the_scan(engine, q) == [("attempt", ids[t]) for t in found], q
    # FTS5 folds É to é where SQLite's LIKE does not: the LIKE decides, as in the scan.
    make_attempt(api, campaign["id"], title="ÉCOLE normale")
    same_as_the_scan(engine, "école")


def test_the_migration_fills_the_index_from_existing_rows_and_goes_away(
    empty_database_url: str,
) -> None:
    url = empty_database_url
    migrate.upgrade(url, "0016")
    engine = make_engine(url)
    now = "2026-12-03 12:00:00"
    with engine.begin() as connection:
        connection.execute(text(
            "INSERT INTO campaign (id, name, metric, higher_is_better, description, noise_pct,"
            " metric_label, created_at) VALUES (1, 'Old campaign', 'tok/s', true, 'walrus',"
            " 1.0, 'x', :now)"), {"now": now})  # fmt: skip
        for n in range(1, 201):
            diagnosis = json.dumps({"root_cause": f"KeyError: {n}"})
            connection.execute(text(
                "INSERT INTO attempt (id, campaign_id, title, hypothesis, command, flags, status,"
                " stack_blocked, diagnosis, created_at, updated_at) VALUES (:id, 1, :title, '',"
                " '', '', 'crashed', false, :diagnosis, :now, :now)"),
                {"id": n, "title": f"attempt {n}", "diagnosis": diagnosis, "now": now})  # fmt: skip
            connection.execute(text(
                "INSERT INTO note (campaign_id, attempt_id, body, created_at, updated_at)"
                " VALUES (1, :id, :body, :now, :now)"),
                {"id": n, "body": f"note on {n}: seal", "now": now})  # fmt: skip

    migrate.upgrade(url)
    in_sync(engine)
    assert same_as_the_scan(engine, "walrus") == [("campaign", 1)]
    assert same_as_the_scan(engine, "KeyError: 137") == [("attempt", 137)]
    with Session(engine) as session:
        assert len(repo.search(session, q="seal", limit=500)) == 200
        assert len(repo.search(session, q="keyerror: 1", limit=500)) == 111  # 1, 10-19, 100-199

    command.downgrade(migrate.alembic_config(url), "0016")
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            left = connection.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE name LIKE '%search%'"
            ).all()
        else:
            left = connection.exec_driver_sql(
                "SELECT indexname FROM pg_indexes WHERE indexname LIKE '%trgm'"
            ).all()
    assert left == []
    with Session(engine) as session:  # the rows stay; the scan still answers
        assert len(scan(session, q="seal", limit=500)) == 200
    migrate.upgrade(url)
    in_sync(engine)
    assert same_as_the_scan(engine, "KeyError: 200") == [("attempt", 200)]
    engine.dispose()


def test_the_index_answers_as_the_scan_over_random_rows(engine: Engine) -> None:
    """Random rows and queries (pieces of the rows in another case, across two fields,
    1 to 12 characters, with LIKE and FTS5 syntax in them), at limits that cut inside a
    rank: search() gives scan()'s answer, hit for hit."""
    rng = random.Random(21)
    words = ["NCCL", "ring", "tree", "allreduce", "fp8", "KV", "100%", "mem_frac", '"q"',
             "OR", "NEAR(", "a*", "cuda-graph", "KeyError: 12", "É", "ß", "tp", "x"]  # fmt: skip

    def phrase() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))

    now = "2026-12-03 12:00:00"
    texts: list[str] = []
    with engine.begin() as connection:
        for c in range(1, 4):
            name, description = phrase(), phrase()
            texts += [name, description]
            connection.execute(text(
                "INSERT INTO campaign (id, name, metric, higher_is_better, description, noise_pct,"
                " metric_label, created_at) VALUES (:id, :name, 'tok/s', true, :description,"
                " 1.0, 'x', :now)"), {"id": 100 + c, "name": name, "description": description,
                "now": now})  # fmt: skip
        for a in range(1, 301):
            row = {"title": phrase(), "hypothesis": phrase(), "command": phrase(),
                   "flags": phrase(), "verdict": rng.choice([None, phrase()]),
                   "cause": rng.choice([None, phrase()])}  # fmt: skip
            texts += [v for v in row.values() if v]
            if a % 7 == 0:
                row["title"] = rng.choice(words)  # rank 0 for that word
            connection.execute(text(
                "INSERT INTO attempt (id, campaign_id, title, hypothesis, command, flags,"
                " status, verdict, stack_blocked, diagnosis, created_at, updated_at) VALUES"
                " (:id, :campaign, :title, :hypothesis, :command, :flags, 'proposed', :verdict,"
                " false, :diagnosis, :now, :now)"),
                {**row, "id": 1000 + a, "campaign": 101 + a % 3, "now": now,
                 "diagnosis": json.dumps({"root_cause": row.pop("cause")})})  # fmt: skip
        for n in range(600):
            body = phrase()
            texts.append(body)
            connection.execute(text(
                "INSERT INTO note (campaign_id, attempt_id, body, created_at, updated_at)"
                " VALUES (:campaign, :attempt, :body, :now, :now)"),
                {"campaign": 101 + n % 3, "attempt": rng.choice([None, 1001 + n % 300]),
                 "body": body, "now": now})  # fmt: skip
    in_sync(engine)

    queries = set(words) | {w.swapcase() for w in words}
    for _ in range(40):
        source = rng.choice(texts) + " " + rng.choice(texts)  # a piece may span two fields
        start = rng.randrange(len(source))
        piece = source[start : start + rng.randint(1, 12)].strip()
        if piece:
            queries.add(rng.choice([piece, piece.upper(), piece.lower(), piece.swapcase()]))
    with Session(engine) as session:
        for n, q in enumerate(sorted(queries)):
            limit = (4, 50)[n % 2]
            assert repo.search(session, q=q, limit=limit) == scan(session, q=q, limit=limit), q
        if engine.dialect.name == "postgresql":
            # The search's planner settings end with it: the rest of the transaction, here
            # scan(), plans as ever (with no sequential scan, scan() took 180 ms, not 8).
            shown = session.execute(text("SHOW enable_seqscan")).scalar_one()
            assert shown == "on"
