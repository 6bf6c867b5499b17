"""Feeding a log in chunks of any size, split anywhere, gives exactly the diagnosis of
feeding it whole (property tests with hypothesis)."""

import bisect
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.diagnosis import Diagnoser, diagnose_bytes
from app.diagnosis import scanner as scanner_module
from app.diagnosis.scanner import Scanner
from tests.helpers import corpus_case_ids, corpus_log

DATA = Path(__file__).parent / "data"

LOGS = [
    (DATA / "seed_torch_symm_mem.log").read_bytes(),
    "[2026-03-01 10:00:00 TP0] Décodé batch — gen throughput (token/s): 82.4\r\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered ✗\r\n".encode()
    * 3,
    b"\x1b[31mERROR\x1b[0m \xff\xfe\x00 Killed\nno newline at the end: KeyError: 12",
    *(corpus_log(case_id) for case_id in corpus_case_ids()),
]


def feed_in_pieces(log: bytes, cuts: list[int]) -> dict:
    diagnoser = Diagnoser()
    previous = 0
    for cut in sorted(set(cuts)):
        diagnoser.feed(log[previous:cut])
        previous = cut
    diagnoser.feed(log[previous:])
    return diagnoser.diagnosis().to_dict()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_chunks_give_the_whole_diagnosis(data: st.DataObject) -> None:
    log = data.draw(st.sampled_from(LOGS))
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(log)), max_size=40))
    assert feed_in_pieces(log, cuts) == diagnose_bytes(log).to_dict()


def test_one_byte_at_a_time() -> None:
    log = LOGS[0]
    diagnoser = Diagnoser()
    for index in range(len(log)):
        diagnoser.feed(log[index : index + 1])
        if index % 997 == 0:
            diagnoser.diagnosis()  # asking in between changes nothing
    assert diagnoser.diagnosis() == diagnose_bytes(log)


def test_a_job_s_last_word_on_a_line_of_its_own_is_read_whatever_the_chunks() -> None:
    """A pattern ending at its line's end ("... tasks completed.") is matched at every line's
    end, not only where a chunk happens to end after that line."""
    log = (
        b"05/28 10:29:25 - AISBench - INFO - time elapsed: 14.55s\n"
        b"05/28 10:29:27 - AISBench - INFO - Performance evaluation tasks completed.\n"
        + b"05/28 10:29:28 - AISBench - INFO - Summarizing performance results...\n" * 12
        + b"cp: cannot create regular file 'outputs/default/20260528': No such file or directory\n"
    )
    whole = diagnose_bytes(log)
    assert (whole.crashed, whole.crashed_reason) == (
        False,
        "line 2: the job said it finished its work",
    )
    for cut in range(len(log) + 1):
        assert feed_in_pieces(log, [cut]) == whole.to_dict(), cut


def windows_log() -> bytes:
    """Several scan windows, an error right at each boundary, figures in every window."""
    window = scanner_module.WINDOW
    filler = (
        b"[2026-03-01 10:00:00 TP0] Decode batch. #running-req: 8, gen throughput (token/s): 81.5\n"
    )
    body = bytearray()
    while len(body) < 3 * window:
        body += filler
        if window - 200 < len(body) % window < window:
            body += b'Traceback (most recent call last):\n  File "x.py", line 1\nKeyError: 12\n'
    return bytes(body)


WINDOWS_LOG = windows_log()


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(WINDOWS_LOG)), max_size=12))
def test_chunks_across_window_boundaries(cuts: list[int]) -> None:
    assert feed_in_pieces(WINDOWS_LOG, cuts) == diagnose_bytes(WINDOWS_LOG).to_dict()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_line_numbers_are_the_log_lines_whatever_the_chunks(data: st.DataObject) -> None:
    """Each kept line's and figure's number is its line in the log, and the lines seen are
    the log's, however the bytes arrive: segments too small for the helper thread count
    their newlines inline, the large ones of the multi-window log on the helper."""
    log = data.draw(st.one_of(st.just(WINDOWS_LOG), st.sampled_from(LOGS)))
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(log)), max_size=40))
    scanner = Scanner()
    previous = 0
    for cut in [*sorted(set(cuts)), len(log)]:
        scanner.feed(log[previous:cut])
        previous = cut
    newlines = [match.start() for match in re.finditer(b"\n", log)]
    kept, figures = scanner.kept_lines(), scanner.figures()
    if log is WINDOWS_LOG:
        assert len(kept) > 100 and len(figures) > 100  # lines in every window to check
    for line in kept:
        assert line.number == bisect.bisect_left(newlines, line.offset) + 1, line
    for figure in figures:
        assert figure.number == bisect.bisect_left(newlines, figure.offset) + 1, figure
    assert scanner.lines_seen == len(newlines)


@given(
    data=st.data(),
    pieces=st.lists(
        st.sampled_from([b"\n", b"\n\n\n", b"x", b"a line of a log " * 8, b"a long line " * 2000]),
        max_size=100,
    ),
    repeats=st.integers(min_value=1, max_value=50),
)
def test_count_newlines_is_bytes_count(
    data: st.DataObject, pieces: list[bytes], repeats: int
) -> None:
    """Sparse newlines (counted through bytes.replace, piece by piece) and dense ones (past
    the short-line limit, by bytes.count), over any bounds."""
    buffer = b"".join(pieces) * repeats
    start = data.draw(st.integers(min_value=0, max_value=len(buffer)))
    end = data.draw(st.integers(min_value=start, max_value=len(buffer)))
    assert scanner_module.count_newlines(buffer, start, end) == buffer.count(b"\n", start, end)


def test_without_the_helper_thread_the_count_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """A daemon thread can still feed a scanner while the interpreter exits, when the helper
    takes no more work: the segment's newlines are then counted inline."""
    expected = diagnose_bytes(WINDOWS_LOG)
    gone = ThreadPoolExecutor(max_workers=1)
    gone.shutdown()
    monkeypatch.setattr(scanner_module, "_NEWLINE_COUNTER", gone)
    assert diagnose_bytes(WINDOWS_LOG) == expected
    assert expected.lines_read == WINDOWS_LOG.count(b"\n")
