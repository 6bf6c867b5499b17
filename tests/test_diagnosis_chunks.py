"""Feeding a log in chunks of any size, split anywhere, gives exactly the diagnosis of
feeding it whole (property tests with hypothesis)."""

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.diagnosis import Diagnoser, diagnose_bytes
from app.diagnosis import scanner as scanner_module

DATA = Path(__file__).parent / "data"
CORPUS = Path(__file__).parent / "corpus" / "cases"

LOGS = [
    (DATA / "seed_torch_symm_mem.log").read_bytes(),
    "[2026-03-01 10:00:00 TP0] Décodé batch — gen throughput (token/s): 82.4\r\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered ✗\r\n".encode()
    * 3,
    b"\x1b[31mERROR\x1b[0m \xff\xfe\x00 Killed\nno newline at the end: KeyError: 12",
    *(path.read_bytes() for path in sorted(CORPUS.glob("*.log"))),
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


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=3 * (1 << 20)), max_size=12))
def test_chunks_across_window_boundaries(cuts: list[int]) -> None:
    """Several scan windows, an error right at a boundary, figures in every window."""
    window = scanner_module.WINDOW
    filler = (
        b"[2026-03-01 10:00:00 TP0] Decode batch. #running-req: 8, gen throughput (token/s): 81.5\n"
    )
    body = bytearray()
    while len(body) < 3 * window:
        body += filler
        if window - 200 < len(body) % window < window:
            body += b'Traceback (most recent call last):\n  File "x.py", line 1\nKeyError: 12\n'
    log = bytes(body)
    assert feed_in_pieces(log, cuts) == diagnose_bytes(log).to_dict()
