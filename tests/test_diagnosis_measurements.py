"""One log, one set of figures and measurements, however its bytes arrive: fed to the engine
in random chunks, ingested one commit per chunk into a real SQLite file, and tailed live
through a real dashboard against the same log attached complete."""

import itertools
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine
from sqlmodel import col, select

from app import actions, migrate
from app.db import make_engine, session_scope
from app.diagnosis import Diagnoser
from app.diagnosis.knowledge.figures import BENCHMARK_LINES, PERIODIC_LINES
from app.diagnosis.scanner import MAX_LINE_BYTES, WINDOW
from app.ingest import AttemptTail
from app.models import Measurement
from app.schemas import AttemptCreate, CampaignCreate
from app.tailing.events import Data, Event, Idle, Opened
from tests.helpers import attempt_of, make_attempt, make_campaign, tail_of, wait_for

LABEL = "Output token throughput"  # a campaign's default metric label


@dataclass
class Log:
    data: bytes
    outputs: list[float]  # every "Output token throughput" figure written, in order
    benchmark_lines: int  # lines of the kind that holds them

    @property
    def every_output_is_kept(self) -> bool:
        return self.benchmark_lines <= BENCHMARK_LINES


def _decode(rng: random.Random) -> str:
    return (
        f"[2026-02-27 13:21:{rng.randrange(60):02d} TP0] Decode batch. #running-req: 8, "
        f"#token: {rng.randrange(1000, 9000)}, token usage: 0.02, cuda graph: True, "
        f"gen throughput (token/s): {rng.uniform(60, 95):.2f}, #queue-req: 0\n"
    )


# Each block writes some lines and returns the Output token throughput figures it wrote.
def _block(name: str, rng: random.Random, out: list[str]) -> tuple[list[float], int]:
    if name == "decode":
        out.append(_decode(rng))
    elif name == "access":
        out.append(f'[2026-02-27 13:21:27] INFO:     127.0.0.1:{rng.randrange(30000, 60000)} - '
                   '"POST /generate HTTP/1.1" 200 OK\n')  # fmt: skip
    elif name == "vllm":
        out.append(f"INFO 02-27 13:21:27 metrics.py:455] Avg prompt throughput: "
                   f"{rng.uniform(0, 900):.1f} tokens/s, Avg generation throughput: "
                   f"{rng.uniform(20, 90):.1f} tokens/s, Running: 8 reqs\n")  # fmt: skip
    elif name == "benchmark":  # sglang bench_serving's summary
        output = round(rng.uniform(70, 95), 2)
        out += [
            "============ Serving Benchmark Result ============\n",
            "Successful requests:                     100\n",
            f"Request throughput (req/s):              {output / 256:.2f}\n",
            f"Output token throughput (tok/s):         {output:.2f}\n",
            f"Total token throughput (tok/s):          {output * 2:.2f}\n",
            "==================================================\n",
        ]
        return [output], 2
    elif name == "plain":
        out.append(f"Throughput: {rng.uniform(70, 95):.1f} tok/s\n")
    elif name == "no figure":  # the literals without a number after them
        out += [
            "[2026-02-27 13:21:27 TP0] Decode batch. gen throughput (token/s): n/a\n",
            "Output token throughput (tok/s):         n/a\n",
            "figures are in tok/s from here on\n",
        ]
        return [], 1
    elif name == "error":
        out += [
            "Traceback (most recent call last):\n",
            '  File "/root/sglang/python/sglang/srt/managers/scheduler.py", line 2989, in run\n',
            "RuntimeError: CUDA error: an illegal memory access was encountered\n",
        ]
    elif name == "long":  # over MAX_LINE_BYTES: read as its first MAX_LINE_BYTES bytes
        output = round(rng.uniform(70, 95), 2)
        out.append(f"Output token throughput (tok/s): {output:.2f} " + "x" * MAX_LINE_BYTES
                   + " Output token throughput (tok/s): 1.0 KeyError: 12\n")  # fmt: skip
        return [output], 1
    return [], 0


BLOCKS = ("decode", "access", "vllm", "benchmark", "plain", "no figure", "error", "long")
# A long line once; a traceback a few times: each one more costs the diagnosis a little,
# the figures nothing (thousands took seconds an example).
REPEATS = {"long": 1, "error": 20}


def make_log(parts: list[tuple[str, int]], seed: int, tail: str = "") -> Log:
    rng = random.Random(seed)
    lines: list[str] = []
    outputs: list[float] = []
    benchmark_lines = 0
    for name, repeat in parts:
        for _ in range(min(repeat, REPEATS.get(name, repeat))):
            figures, kind_lines = _block(name, rng, lines)
            outputs += figures
            benchmark_lines += kind_lines
    return Log("".join(lines).encode() + tail.encode(), outputs, benchmark_lines)


logs = st.builds(
    make_log,
    parts=st.lists(
        st.tuples(st.sampled_from(BLOCKS), st.integers(min_value=1, max_value=4000)),
        min_size=1, max_size=6,
    ),
    seed=st.integers(0, 1000),
    tail=st.sampled_from(["", "Output token throughput (tok/s):  81.0", "[2026-02-27 13:2"]),
)  # fmt: skip


def pieces(size: int, cuts: list[int]) -> list[tuple[int, int]]:
    bounds = [0, *sorted({cut for cut in cuts if 0 < cut < size}), size]
    return list(itertools.pairwise(bounds))


def fed(log: bytes, cuts: list[int]) -> Diagnoser:
    diagnoser = Diagnoser()
    for start, end in pieces(len(log), cuts):
        diagnoser.feed(log[start:end])
    return diagnoser


def taken_along_the_way(log: bytes, cuts: list[int]) -> list[tuple[int, float]]:
    """What a tail asking after every chunk takes: the settled figures past the last taken."""
    diagnoser, taken = Diagnoser(), []
    for start, end in pieces(len(log), cuts):
        diagnoser.feed(log[start:end])
        for figure in diagnoser.settled_throughput(LABEL):
            if not taken or figure.offset > taken[-1][0]:
                taken.append((figure.offset, figure.value))
    return taken


def cut_points(size: int) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(min_value=0, max_value=size), max_size=40)


# Sixty examples in all, in three searches of twenty: the workers share them (in one search
# they held one worker for over a minute, often the last to finish).
@pytest.mark.parametrize("search", range(3))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=logs, data=st.data())
def test_figures_do_not_depend_on_the_chunks(search: int, log: Log, data: st.DataObject) -> None:
    cuts = data.draw(cut_points(len(log.data)))
    whole, chunked = fed(log.data, []), fed(log.data, cuts)
    assert chunked.diagnosis() == whole.diagnosis()
    settled = whole.settled_throughput(LABEL)
    assert chunked.settled_throughput(LABEL) == settled
    assert taken_along_the_way(log.data, cuts) == [(f.offset, f.value) for f in settled]
    if log.every_output_is_kept:
        assert [f.value for f in settled] == log.outputs


def test_one_byte_4_kib_1_mib_and_whole_give_the_same_figures() -> None:
    """Past both caps (periodic and benchmark lines), across several windows."""
    log = make_log(
        [("decode", 4000), ("benchmark", BENCHMARK_LINES // 2 + 500), ("decode", 200),
         ("no figure", 3), ("benchmark", 3)],
        seed=1,
    )  # fmt: skip
    assert len(log.data) > 2 * WINDOW and not log.every_output_is_kept
    whole = fed(log.data, [])
    for step in (1, 4096, WINDOW):
        chunked = fed(log.data, list(range(step, len(log.data), step)))
        assert chunked.diagnosis() == whole.diagnosis(), step
        assert chunked.settled_throughput(LABEL) == whole.settled_throughput(LABEL), step
    figures = whole.diagnosis().throughput
    decode = [f for f in figures if f.label == "gen throughput"]
    assert PERIODIC_LINES < len(decode) < PERIODIC_LINES + len(log.data) // WINDOW + 2
    outputs = [f.value for f in whole.settled_throughput(LABEL)]
    assert outputs[: BENCHMARK_LINES // 2] == log.outputs[: BENCHMARK_LINES // 2]


# --- the ingest: one commit per chunk, into a real SQLite file --------------------------------


class Scripted:
    """A source above the source interface: the log's pieces, each followed by the idle
    moment a real source reports when caught up (where the ingest commits)."""

    def __init__(self, log: bytes, cuts: list[int]) -> None:
        self.log, self.cuts = log, cuts

    def follow(self, offset: int, identity: str | None, stop: threading.Event) -> Iterator[Event]:
        yield Opened("scripted", len(self.log))
        for start, end in pieces(len(self.log), self.cuts):
            if end > offset:
                yield Data(start, self.log[start:end])
                yield Idle(end)


@pytest.fixture(scope="module")
def ingest_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Engine, int, str]]:
    directory = tmp_path_factory.mktemp("ingest")
    url = f"sqlite:///{directory / 'campaign-dash.db'}"
    migrate.upgrade(url)
    engine = make_engine(url)
    log_path = directory / "server.log"
    log_path.write_bytes(b"")
    with session_scope(engine) as session:
        campaign_id = actions.create_campaign(session, CampaignCreate(name="chunks")).id or 0
    yield engine, campaign_id, f"file://{log_path}"
    engine.dispose()


def ingested(ingest: tuple[Engine, int, str], log: bytes, cuts: list[int]) -> list[tuple]:
    engine, campaign_id, source = ingest
    with session_scope(engine) as session:
        data = AttemptCreate(title="chunked", source=source)
        attempt_id = actions.create_attempt(session, campaign_id, data).id or 0
    tail = AttemptTail(engine, attempt_id, Scripted(log, cuts), stall_after_s=300)
    tail.start()
    tail.thread.join(120)
    assert not tail.thread.is_alive()
    with session_scope(engine) as session:
        rows = session.exec(
            select(Measurement.log_offset, Measurement.value)
            .where(Measurement.attempt_id == attempt_id)
            .order_by(col(Measurement.id))
        ).all()
    return [tuple(row) for row in rows]


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(log=logs, data=st.data())
def test_the_ingest_derives_the_same_measurements_whatever_the_chunks(
    ingest_db: tuple[Engine, int, str], log: Log, data: st.DataObject
) -> None:
    cuts = data.draw(cut_points(len(log.data)))
    at_once = ingested(ingest_db, log.data, [])
    assert ingested(ingest_db, log.data, cuts) == at_once
    settled = fed(log.data, []).settled_throughput(LABEL)
    assert at_once == [(f.offset, f.value) for f in settled]
    if log.every_output_is_kept:
        assert [value for _, value in at_once] == log.outputs


# --- the whole pipeline: a real dashboard tailing a file:// log ------------------------------


def test_a_log_tailed_live_and_attached_complete_give_the_same_measurements(
    api: httpx.Client, tmp_path: Path
) -> None:
    log = make_log(
        [("decode", 150), ("benchmark", 300), ("decode", 9600), ("benchmark", 400),
         ("access", 4000), ("benchmark", 300), ("decode", 100)],
        seed=3,
    )  # fmt: skip
    assert len(log.data) > 2 * WINDOW and log.every_output_is_kept
    campaign = make_campaign(api)
    live_path, complete_path = tmp_path / "live.log", tmp_path / "complete.log"
    live_path.write_bytes(b"")
    live = make_attempt(api, campaign["id"], title="tailed live", source=f"file://{live_path}")
    rng = random.Random(5)
    written = 0
    with live_path.open("ab") as out:
        while written < len(log.data):
            piece = log.data[written : written + rng.randrange(1, 256 << 10)]
            out.write(piece)
            out.flush()
            written += len(piece)
            # The dashboard reads each piece before the next is written: a live tail.
            wait_for(
                lambda end=written: tail_of(api, live["id"]).get("stored_bytes", 0) >= end,
                what=f"the tail at {written}",
            )
    complete_path.write_bytes(log.data)
    complete = make_attempt(
        api, campaign["id"], title="attached complete", source=f"file://{complete_path}"
    )

    def measured(attempt_id: int) -> dict | None:
        body = attempt_of(api, attempt_id)
        done = body["tail"] and body["tail"]["stored_bytes"] == len(log.data)
        return body if done and body["metric"] else None

    first = wait_for(lambda: measured(live["id"]), what="the live tail's measurements")
    second = wait_for(lambda: measured(complete["id"]), what="the complete log's measurements")
    assert first["metric"]["samples"] == second["metric"]["samples"] == log.outputs
    assert first["metric"]["n"] == len(log.outputs) == 1000
    assert first["diagnosis"]["throughput"] == second["diagnosis"]["throughput"]
    assert first["diagnosis"]["throughput_total"] == second["diagnosis"]["throughput_total"]
