"""The follower's framing: every event the follower yields comes out of the decoder as it
went in, however the channel cuts the bytes."""

import pytest

from app.tailing import wire
from app.tailing.events import Data, Idle, Opened, Rotated, State, Writer, from_follower
from app.tailing.status import TailStatus

FRAMES = [
    ("I", "2049:1234:1024:0a1b2c3d", 4096),
    ("D", 0, b"first line\nsecond\n"),
    ("D", 18, b"D 1 1\n\x00binary \xff and a header-shaped line\n"),
    ("D", 64, b""),
    ("H", 4096),
    ("R", "2049:99:10:00000000"),
    ("T", "2049:1234:5:ffffffff"),
    ("W",),
    ("N", "/var/log is a directory, not a log file"),
    ("E", 13, "Permission denied"),
    ("O", True),
    ("O", False),
    ("O", None),
]


def test_every_frame_comes_back_as_it_went_in_whatever_the_cuts() -> None:
    stream = b"".join(wire.encode(frame) for frame in FRAMES)
    for step in (1, 2, 7, len(stream)):
        decoder, out = wire.Decoder(), []
        for start in range(0, len(stream), step):
            decoder.feed(stream[start : start + step])
            out += list(decoder.frames())
        assert out == FRAMES, step
        assert not decoder.buffer


def test_a_message_cannot_break_the_framing() -> None:
    decoder = wire.Decoder()
    decoder.feed(wire.encode(("E", 5, "Input/output error\nD 0 99\n")) + wire.encode(("H", 7)))
    assert list(decoder.frames()) == [("E", 5, "Input/output error D 0 99 "), ("H", 7)]


def test_an_unknown_frame_is_an_error_not_a_guess() -> None:
    decoder = wire.Decoder()
    decoder.feed(b"Z something\n")
    with pytest.raises(ValueError, match="not a follower frame"):
        list(decoder.frames())


def test_frames_as_the_sources_events() -> None:
    assert [from_follower(frame) for frame in FRAMES] == [
        Opened("2049:1234:1024:0a1b2c3d", 4096),
        Data(0, b"first line\nsecond\n"),
        Data(18, b"D 1 1\n\x00binary \xff and a header-shaped line\n"),
        Data(64, b""),
        Idle(4096),
        Rotated("2049:99:10:00000000", "rotated"),
        Rotated("2049:1234:5:ffffffff", "truncated"),
        State(TailStatus.file_not_found, "waiting for the file to appear"),
        State(TailStatus.not_a_log, "/var/log is a directory, not a log file"),
        State(TailStatus.permission_denied, "Permission denied"),
        Writer(True),
        Writer(False),
        Writer(None),
    ]


def test_tail_states_keep_the_strings_stored_and_served() -> None:
    """The API's `tail.state` and stored rows: the enum's values are those strings."""
    assert {state.value for state in TailStatus} >= {
        "connecting", "connected", "catching up", "stalled", "stopped", "file not found yet",
        "not a log file", "permission denied", "error", "host unreachable", "connection lost",
        "authentication failed", "host key not trusted", "host key changed",
    }  # fmt: skip
    assert TailStatus.stopped.label == "no longer followed"
    assert TailStatus("host key changed").infrastructure
    assert not TailStatus.file_not_found.infrastructure
