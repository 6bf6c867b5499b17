"""Time the indexed search (migration 0017) against a plain LIKE scan of the same rows.

    python bench/search.py [--attempts 10000] [--notes 30000] [--runs 21]
                           [--postgres postgresql://postgres@127.0.0.1:5432/postgres]

Builds, in a fresh SQLite file and in a fresh PostgreSQL database (`campaign_dash_bench_search`,
created and dropped here; `--postgres ''` leaves PostgreSQL out), 20 campaigns with N attempts
(titles, hypotheses, flags and sglang launch commands drawn from the seeds' world, a root cause
in the diagnosis of every third) and M notes, through the migrated schema (the index's triggers
fire on every insert). Then, in turns, each query of a set (rare words, common words, a flag,
a 2-character query that the trigram index cannot serve) as `GET /api/search` runs it
(the query and the snippets), through the index (`repo.search`) and as the scan before it
(`app.repo.search.scan`, today's query; on PostgreSQL with bitmap scans off, the only way GIN
indexes are read). Each pair's answers are checked equal. Prints p50 and p99 per query and
over the set, and their ratios.
"""

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import Engine, text
from sqlmodel import Session

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's app

from app import migrate, repo, views
from app.db import libpq_dsn, make_engine
from app.repo.search import scan

DATABASE = "campaign_dash_bench_search"
QUERIES = {
    "rare word": "quokka",
    "rare root cause": "KeyError: 4242",
    "common word": "allreduce",
    "common, any case": "NCCL",
    "a flag": "--cuda-graph-max-bs",
    "phrase": "out of memory",
    "2 chars (scan)": "tp",
}
IDEAS = [
    "enable FlashInfer allreduce fusion", "NCCL Tree algorithm", "torch symmetric memory",
    "upgrade to CUDA 13", "EAGLE-3 speculative decoding", "FP8 KV cache",
    "custom allreduce off", "larger CUDA graph batch", "chunked prefill 8192",
    "DeepEP low-latency mode", "overlap scheduler", "torch.compile the decode step",
    "NCCL ring with 2 channels", "PCIe P2P off", "radix cache off", "two-batch overlap",
]  # fmt: skip
WHY = [
    "the allreduce dominates decode on PCIe", "graph capture should hide launch overhead",
    "the KV cache is the limit at 64 concurrent requests", "NCCL picks Ring on 8 GPUs over PCIe",
    "speculative decoding accepts 3.1 tokens a step on this workload",
    "memory bandwidth bound at batch 1", "the scheduler stalls between batches",
]  # fmt: skip
CAUSES = [
    "KeyError: 12", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "ImportError: libcudart.so.13: cannot open shared object file",
    "ValueError: max_model_len (131072) is larger than the KV cache can hold",
    "torch.distributed.DistBackendError: NCCL communicator was aborted: watchdog timeout",
    "RuntimeError: Capture failed: operation not permitted when stream is capturing",
]  # fmt: skip
FLAGS = [
    "--enable-flashinfer-allreduce-fusion", "--disable-custom-all-reduce",
    "--enable-torch-symm-mem",
    "--kv-cache-dtype fp8_e5m2", "--chunked-prefill-size 8192", "--disable-radix-cache",
    "--enable-two-batch-overlap", "--speculative-algorithm EAGLE3", "--enable-torch-compile",
]  # fmt: skip
NOTES = [
    "Dead end: {cause}. Same as last week's run on the other box.",
    "Throughput {value} tok/s, within noise of the baseline; not worth the complexity.",
    "Retest after the CUDA 13 pivot; the allreduce path changed.",
    "**Next:** try {flag} with tp 8 and compare against #{ref}.",
    "The log's server_args line shows {flag} was not applied; relaunch.",
]  # fmt: skip


def rows(attempts: int, notes: int, seed: int = 7) -> tuple[list[dict], list[dict], list[dict]]:
    rng = random.Random(seed)
    now = "2026-12-03 12:00:00"
    campaigns = [
        {"id": c, "name": f"Campaign {c}: Kimi K2.5 on 8x H200", "description":
         f"tok/s at 64 concurrent requests, round {c}", "now": now}
        for c in range(1, 21)
    ]  # fmt: skip
    made = []
    for a in range(1, attempts + 1):
        flags = " ".join(rng.sample(FLAGS, rng.randint(1, 3)))
        cause = CAUSES[a % len(CAUSES)] if a % 3 == 0 else None
        if a == 4242:
            cause = "KeyError: 4242"
        made.append({
            "id": a, "campaign_id": a % 20 + 1,
            "title": f"{rng.choice(IDEAS)} #{a}",
            "hypothesis": f"{rng.choice(WHY)}; {rng.choice(WHY)}"
                          + (" (the quokka path)" if a % 2500 == 1 else ""),
            "command": "python -m sglang.launch_server --model-path /shared/kimi-k2.5-int4 "
                       f"--tp 8 --cuda-graph-max-bs {rng.choice([80, 96, 128, 160])} "
                       f"--mem-fraction-static 0.{rng.randint(80, 92)} {flags}",
            "flags": flags,
            "status": "crashed" if cause else rng.choice(["measured", "eliminated", "adopted"]),
            "verdict": f"eliminated: {rng.choice(WHY)}" if a % 4 == 0 else None,
            "diagnosis": json.dumps({"crashed": bool(cause), "root_cause": cause}),
            "now": now,
        })  # fmt: skip
    made_notes = []
    for n in range(1, notes + 1):
        attempt = rng.randint(1, attempts)
        body = rng.choice(NOTES).format(
            cause=rng.choice(CAUSES), value=rng.randint(80, 130), flag=rng.choice(FLAGS),
            ref=rng.randint(1, attempts),
        )  # fmt: skip
        if n % 10000 == 7:
            body += " A quokka-sized change."
        made_notes.append({"campaign_id": attempt % 20 + 1, "attempt_id": attempt,
                           "body": body, "now": now})  # fmt: skip
    return campaigns, made, made_notes


def seed(engine: Engine, attempts: int, notes: int) -> float:
    campaigns, made, made_notes = rows(attempts, notes)
    started = time.perf_counter()
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO campaign (id, name, metric, higher_is_better, description, noise_pct,"
                " metric_label, created_at) VALUES (:id, :name, 'tok/s', true, :description, 1.0,"
                " 'Output token throughput', :now)"
            ),
            campaigns,
        )
        connection.execute(
            text(
                "INSERT INTO attempt (id, campaign_id, title, hypothesis, command, flags, status,"
                " verdict, stack_blocked, diagnosis, created_at, updated_at) VALUES (:id,"
                " :campaign_id, :title, :hypothesis, :command, :flags, :status, :verdict, false,"
                " :diagnosis, :now, :now)"
            ),
            made,
        )
        connection.execute(text(
            "INSERT INTO note (campaign_id, attempt_id, body, created_at, updated_at)"
            " VALUES (:campaign_id, :attempt_id, :body, :now, :now)"), made_notes)  # fmt: skip
    return time.perf_counter() - started


def answer(engine: Engine, q: str, indexed: bool) -> tuple[float, list[tuple[Any, ...]]]:
    """One search as the API runs it (the query and the snippets): seconds and the hits."""
    started = time.perf_counter()
    with Session(engine) as session:
        if engine.dialect.name != "sqlite" and not indexed:
            session.execute(text("SET LOCAL enable_bitmapscan = off"))
        matches = repo.search(session, q=q) if indexed else scan(session, q=q)
        hits = [(m.kind, m.row_id, views.snippet(m.texts, q)) for m in matches]
    return time.perf_counter() - started, hits


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def measure(engine: Engine, label: str, runs: int) -> None:
    print(f"\n{label}: ms, p50 / p99 over {runs} runs each, indexed against the scan")
    print(f"  {'query':<22} {'hits':>5} {'indexed':>17} {'scan':>17} {'ratio p50':>10}")
    every: dict[bool, list[float]] = {True: [], False: []}
    for name, q in QUERIES.items():
        times: dict[bool, list[float]] = {True: [], False: []}
        answer(engine, q, True), answer(engine, q, False)  # warm the caches
        for _ in range(runs):
            for indexed in (True, False):  # in turns: the machine's noise falls on both
                seconds, hits = answer(engine, q, indexed)
                times[indexed].append(seconds * 1000)
                if indexed:
                    kept = hits
                else:
                    assert hits == kept, f"{q!r}: the index answered otherwise than the scan"
        for indexed in (True, False):
            every[indexed] += times[indexed]
        i50, s50 = statistics.median(times[True]), statistics.median(times[False])
        print(f"  {name:<22} {len(kept):>5} {i50:>7.1f} / {p99(times[True]):>7.1f} "
              f"{s50:>7.1f} / {p99(times[False]):>7.1f} {i50 / s50:>9.2f}x")  # fmt: skip
    i50, s50 = statistics.median(every[True]), statistics.median(every[False])
    print(f"  {'all queries':<22} {'':>5} {i50:>7.1f} / {p99(every[True]):>7.1f} "
          f"{s50:>7.1f} / {p99(every[False]):>7.1f} {i50 / s50:>9.2f}x")  # fmt: skip


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    dsn = libpq_dsn(admin_url)
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{DATABASE}"')
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{DATABASE}"
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')


def bench(url: str, label: str, args: argparse.Namespace) -> None:
    migrate.upgrade(url)
    engine = make_engine(url)
    try:
        took = seed(engine, args.attempts, args.notes)
        with engine.begin() as connection:
            connection.execute(text("ANALYZE"))
        print(f"\n{label}: {args.attempts:,} attempts, {args.notes:,} notes inserted through "
              f"the triggers/indexes in {took:.1f} s")  # fmt: skip
        measure(engine, label, args.runs)
    finally:
        engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--attempts", type=int, default=10_000)
    parser.add_argument("--notes", type=int, default=30_000)
    parser.add_argument("--runs", type=int, default=21, help="per query and way")
    parser.add_argument(
        "--postgres",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
        help="an admin URL: the bench creates and drops its own database there ('': none)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        bench(f"sqlite:///{Path(folder) / 'search.db'}", "SQLite (FTS5 trigram)", args)
    if args.postgres:
        with postgres_database(args.postgres) as url:
            bench(url, "PostgreSQL (pg_trgm GIN)", args)


if __name__ == "__main__":
    main()
