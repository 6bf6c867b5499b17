"""Follow one log file from a byte offset, through rotation and truncation.

Standard library only and Python 3.6 compatible: the same code follows a local file
in-process (file:// sources) and is sent verbatim to a remote host, where
`python3 - PATH OFFSET IDENTITY` runs `main()` and writes framed events to stdout
(ssh:// sources). One offset logic for both.

Events: ("I", identity, size) file opened; ("D", offset, data) bytes at that offset;
("R", identity) rotated, new file follows from 0; ("T",) truncated, restart from 0;
("H", size) idle or heartbeat; ("W",) file not there yet; ("E", errno, message) error.
"""

import os
import sys
import time
from typing import Callable, Iterator, Tuple

Event = Tuple

READ_SIZE = 1 << 20
POLL_ACTIVE_S = 0.005  # just after data: appends come in bursts
POLL_IDLE_S = 0.1
ACTIVE_FOR_S = 2.0
HEARTBEAT_S = 1.0
ROTATION_GRACE_S = 0.3  # a writer may append to the old file until it reopens


def _identity(st: os.stat_result) -> str:
    return "%d:%d" % (st.st_dev, st.st_ino)


def follow(
    path: str, offset: int, identity: str, should_stop: Callable[[], bool] = lambda: False
) -> Iterator[Event]:
    """Yield events for `path` from `offset`; `identity` is the file it belongs to, or "-"."""
    fd = None
    current = None
    last_data = 0.0
    last_beat = 0.0
    rotated_seen = None
    while not should_stop():
        now = time.time()
        if fd is None:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                yield ("W",)
                time.sleep(POLL_IDLE_S * 5)
                continue
            except OSError as error:
                yield ("E", error.errno, error.strerror or str(error))
                time.sleep(5)
                continue
            st = os.fstat(fd)
            current = _identity(st)
            if identity not in ("-", current):
                yield ("R", current)
                offset = 0
            elif st.st_size < offset:
                yield ("T",)
                offset = 0
            identity = current
            yield ("I", current, st.st_size)
            os.lseek(fd, offset, os.SEEK_SET)
        data = os.read(fd, READ_SIZE)
        if data:
            yield ("D", offset, data)
            offset += len(data)
            last_data = now
            rotated_seen = None
            continue
        size = os.fstat(fd).st_size
        if size < offset:
            # Truncated in place (copytruncate): what is there now is new.
            yield ("T",)
            offset = 0
            os.lseek(fd, 0, os.SEEK_SET)
            continue
        try:
            on_disk = _identity(os.stat(path))
        except FileNotFoundError:
            on_disk = None
        if on_disk is not None and on_disk != current:
            # Rotated: drain the old file until it stops growing, then switch.
            if rotated_seen is None:
                rotated_seen = now
            elif now - rotated_seen >= ROTATION_GRACE_S:
                # Reopening finds another identity and reports ("R", new).
                os.close(fd)
                fd = None
                rotated_seen = None
                continue
        if last_data and now - last_data < POLL_ACTIVE_S * 2:
            yield ("H", size)  # caught up: the reader may commit now
        elif now - last_beat >= HEARTBEAT_S:
            yield ("H", size)
            last_beat = now
        time.sleep(POLL_ACTIVE_S if now - last_data < ACTIVE_FOR_S else POLL_IDLE_S)
    if fd is not None:
        os.close(fd)


def _frame(event: Event) -> bytes:
    kind = event[0]
    if kind == "D":
        return b"D %d %d\n" % (event[1], len(event[2])) + event[2]
    return (" ".join(str(part) for part in event).replace("\n", " ") + "\n").encode()


def main() -> None:
    path, offset, identity = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    out = sys.stdout.buffer
    try:
        for event in follow(path, offset, identity):
            # Every event, heartbeats included, is a write: when the SSH session is gone
            # the write fails and this process ends (no orphan left on the host).
            out.write(_frame(event))
            out.flush()
    except (BrokenPipeError, KeyboardInterrupt):
        pass


if __name__ == "__main__":
    main()
