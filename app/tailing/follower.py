"""Follow one log file from a byte offset, through rotation and truncation.

Standard library only and Python 3.6 compatible: the same code follows a local file
in-process (file:// sources) and is sent verbatim to a remote host, where
`python3 - PATH OFFSET IDENTITY` runs `main()` and writes framed events to stdout
(ssh:// sources). One offset logic for both.

A file's identity is "dev:ino:length:crc32": the inode says which file (rename
rotation), the checksum of its first bytes says which content (copytruncate, then
regrowth past the old size before the next look, which size alone cannot see).

Events: ("I", identity, size) file opened, or its fingerprint grew; ("D", offset, data)
bytes at that offset; ("R", identity) rotated, new file follows from 0; ("T", identity)
truncated or replaced in place, restart from 0; ("H", size) idle or heartbeat; ("W",)
file not there yet; ("N", reason) not a file to follow (a directory, a FIFO...);
("E", errno, message) error; ("O", True|False|None) after WRITER_QUIET_S without a byte,
whether a process still holds the file open for writing (None: cannot tell), again after
each burst of data and whenever the answer changes.
"""

import os
import stat
import sys
import time
import zlib
from typing import Callable, Iterator, Optional, Tuple

if __name__ != "__main__":
    # Run on a host, this file's code comes after wire.py's: `encode` is already there.
    from app.tailing.wire import encode

Event = Tuple

READ_SIZE = 1 << 20
POLL_ACTIVE_S = 0.005  # just after data: appends come in bursts
POLL_IDLE_S = 0.1
ACTIVE_FOR_S = 2.0
HEARTBEAT_S = 1.0
ROTATION_GRACE_S = 0.3  # a writer may append to the old file until it reopens
# A writer still holding the old file open keeps it followed this long at most (a logger
# that reopens only on a signal, or one caught between its open and its write).
ROTATION_DRAIN_MAX_S = 30.0
REFUSED_RETRY_S = 5.0
# Whether a writer is left is asked only of a quiet file, first this often, then half as
# often at each same answer: the look walks every visible process's descriptors (a few ms,
# bench/follower.py), and a file quiet for hours has said what it will say.
WRITER_QUIET_S = 5.0
WRITER_LOOK_EVERY_S = 5.0
WRITER_LOOK_MAX_S = 60.0
PROC = "/proc"
_ACCESS_MODE = 0o3  # O_ACCMODE: 1 is O_WRONLY, 2 is O_RDWR
_UNSAID = object()  # no writer answer yielded since the file was opened or last written
# As Vector and Filebeat fingerprint files: enough to tell two logs of one server apart
# (their first lines carry timestamps), little enough to re-read at every look.
FINGERPRINT_BYTES = 1024
# Their content is made up at each read: followed, they would be re-read forever.
PSEUDO_ROOTS = ("/proc", "/sys")

Refusal = Callable[[str, os.stat_result], Optional[str]]


def _inode(st: os.stat_result) -> str:
    return "%d:%d" % (st.st_dev, st.st_ino)


def _crc(data: bytes) -> str:
    return "%08x" % (zlib.crc32(data) & 0xFFFFFFFF)


def _known_fingerprint(identity: str) -> Tuple[str, int, str]:
    """(inode, length, crc) of a stored identity; length 0 when it has no fingerprint
    (an identity stored before fingerprints, or "-")."""
    parts = identity.split(":")
    if len(parts) == 4 and parts[2].isdigit():
        return ":".join(parts[:2]), int(parts[2]), parts[3]
    return ":".join(parts[:2]), 0, _crc(b"")


def _recheck(fd: int, length: int, crc: str) -> Optional[Tuple[int, str]]:
    """The file's fingerprint now, grown to what is there up to FINGERPRINT_BYTES; None
    when its first `length` bytes are no longer those fingerprinted (replaced in place).
    One read serves both, so a growth never fingerprints another content's bytes."""
    head = os.pread(fd, FINGERPRINT_BYTES, 0)
    if len(head) < length or _crc(head[:length]) != crc:
        return None
    return len(head), (crc if len(head) == length else _crc(head))


def _fresh(fd: int) -> Tuple[int, str]:
    head = os.pread(fd, FINGERPRINT_BYTES, 0)
    return len(head), _crc(head)


def unfollowable(path: str, st: os.stat_result) -> Optional[str]:
    """Why `path` is no log to follow, or None: only regular files end where they end."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        return "%s is a directory, not a log file" % path
    if stat.S_ISFIFO(mode):
        return "%s is a named pipe (FIFO): reading it would block the tail" % path
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "%s is a device, not a log file" % path
    if not stat.S_ISREG(mode):
        return "%s is not a regular file" % path
    real = os.path.realpath(path)
    for root in PSEUDO_ROOTS:
        try:
            # Only where it is a file system of its own (not an empty folder of "/").
            device = os.stat(root).st_dev
            pseudo = device == st.st_dev and device != os.stat("/").st_dev
        except OSError:
            pseudo = False
        if pseudo or real == root or real.startswith(root + "/"):
            return "%s is a kernel pseudo-file (%s): it has no end to follow" % (path, root)
    return None


def writer_open(st: os.stat_result, proc: Optional[str] = None) -> Optional[bool]:
    """Whether a process holds the file `st` describes open for writing: found among the
    /proc/PID/fd links this user may read, with the O_WRONLY or O_RDWR flag of its fdinfo.
    None when that cannot tell: no /proc (not Linux), or the file belongs to another user,
    whose processes (most likely its writer) this user cannot see."""
    if os.geteuid() != 0 and st.st_uid != os.geteuid():
        return None
    proc = proc or PROC
    try:
        pids = [name for name in os.listdir(proc) if name.isdigit()]
    except OSError:
        return None
    for pid in pids:
        fds = proc + "/" + pid + "/fd"
        try:
            names = os.listdir(fds)
        except OSError:
            continue  # ended meanwhile, or another user's
        for name in names:
            try:
                if not os.readlink(fds + "/" + name).startswith("/"):
                    continue  # a socket, a pipe: no file of a path
                linked = os.stat(fds + "/" + name)
            except OSError:
                continue
            if (linked.st_dev, linked.st_ino) == (st.st_dev, st.st_ino) and _writes(
                proc + "/" + pid + "/fdinfo/" + name
            ):
                return True
    return False


def _writes(fdinfo: str) -> bool:
    try:
        with open(fdinfo) as info:
            for line in info:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8) & _ACCESS_MODE in (1, 2)
    except (OSError, ValueError, IndexError):
        pass
    return False


def follow(
    path: str,
    offset: int,
    identity: str,
    should_stop: Callable[[], bool] = lambda: False,
    refuse: Optional[Refusal] = None,
) -> Iterator[Event]:
    """Yield events for `path` from `offset`; `identity` is the file it belongs to, or "-".
    `refuse(path, stat)` may name a reason not to read a file this reader must not serve."""
    fd = None
    inode = None
    length, crc = 0, _crc(b"")  # the fingerprint of the file read now
    reported = ""  # the identity last yielded
    last_data = 0.0
    opened_at = 0.0
    writer_said: object = _UNSAID
    writer_looked = 0.0
    writer_gap = WRITER_LOOK_EVERY_S
    last_beat = 0.0
    rotated_seen = None
    rotation_looked = 0.0
    while not should_stop():
        now = time.time()
        if fd is None:
            try:
                # Looked at before it is opened: opening a FIFO blocks, a device may act.
                reason = _refusal(path, os.stat(path), refuse)
                if reason is None:
                    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
                    st = os.fstat(fd)
                    reason = _refusal(path, st, refuse)  # swapped in between
                    if reason is not None:
                        os.close(fd)
                        fd = None
            except FileNotFoundError:
                yield ("W",)
                time.sleep(POLL_IDLE_S * 5)
                continue
            except OSError as error:
                yield ("E", error.errno, error.strerror or str(error))
                time.sleep(5)
                continue
            if fd is None:
                yield ("N", reason)
                time.sleep(REFUSED_RETRY_S)
                continue
            inode = _inode(st)
            known_inode, known_length, known_crc = _known_fingerprint(identity)
            fingerprint = None
            if known_inode == inode:
                fingerprint = _recheck(fd, known_length, known_crc)
            event = None
            if identity != "-" and known_inode != inode:
                event = "R"
            elif identity != "-" and (fingerprint is None or st.st_size < offset):
                event = "T"  # replaced in place while nobody looked
            if event is not None:
                offset = 0
            if event is not None or fingerprint is None:
                fingerprint = _fresh(fd)
            length, crc = fingerprint
            reported = identity = "%s:%d:%s" % (inode, length, crc)
            if event is not None:
                yield (event, identity)
            yield ("I", identity, st.st_size)
            opened_at, writer_said, writer_gap = now, _UNSAID, WRITER_LOOK_EVERY_S
            os.lseek(fd, offset, os.SEEK_SET)
        data = os.read(fd, READ_SIZE)
        now_fingerprint = _recheck(fd, length, crc)
        if now_fingerprint is None:
            # Truncated and written again (copytruncate) since the last look: what was just
            # read may be the new content's, at the old offset. The new content is read
            # from 0 instead.
            length, crc, reported = _from_the_start(fd, inode)
            yield ("T", reported)
            offset = 0
            continue
        length, crc = now_fingerprint
        if data:
            yield ("D", offset, data)
            offset += len(data)
            last_data = now
            rotated_seen = None
            writer_said, writer_gap = _UNSAID, WRITER_LOOK_EVERY_S
            continue
        now_st = os.fstat(fd)
        size = now_st.st_size
        if size < offset:
            # Truncated in place (copytruncate): what is there now is new.
            length, crc, reported = _from_the_start(fd, inode)
            yield ("T", reported)
            offset = 0
            continue
        current = "%s:%d:%s" % (inode, length, crc)
        if current != reported:
            # The fingerprint grew with a short file: stored with the offset, it lets a
            # restart tell this content from a replacement.
            reported = current
            yield ("I", current, size)
        try:
            on_disk = _inode(os.stat(path))
        except FileNotFoundError:
            on_disk = None
        if on_disk is not None and on_disk != inode:
            # Rotated: drain the old file until it stops growing and no process holds it
            # open for writing (asked once a grace period), then switch.
            if rotated_seen is None:
                rotated_seen = rotation_looked = now
            elif now - rotation_looked >= ROTATION_GRACE_S:
                rotation_looked = now
                draining = now - rotated_seen < ROTATION_DRAIN_MAX_S and writer_open(now_st)
                # A writer's last bytes may land while the look walks /proc, just before it
                # closes the file: read them before the switch.
                if not draining and os.fstat(fd).st_size > offset:
                    continue
                if not draining:
                    # Reopening finds another identity and reports ("R", new).
                    os.close(fd)
                    fd = None
                    identity = reported
                    rotated_seen = None
                    continue
        quiet = now - max(last_data, opened_at)
        if quiet >= WRITER_QUIET_S and now - writer_looked >= writer_gap:
            writer_looked = now
            writer = writer_open(now_st)
            if writer is not writer_said:
                writer_said, writer_gap = writer, WRITER_LOOK_EVERY_S
                yield ("O", writer)
            else:
                writer_gap = min(WRITER_LOOK_MAX_S, writer_gap * 2)
        if last_data and now - last_data < POLL_ACTIVE_S * 2:
            yield ("H", size)  # caught up: the reader may commit now
        elif now - last_beat >= HEARTBEAT_S:
            yield ("H", size)
            last_beat = now
        time.sleep(POLL_ACTIVE_S if now - last_data < ACTIVE_FOR_S else POLL_IDLE_S)
    if fd is not None:
        os.close(fd)


def _refusal(path: str, st: os.stat_result, refuse: Optional[Refusal]) -> Optional[str]:
    return unfollowable(path, st) or (refuse(path, st) if refuse is not None else None)


def _from_the_start(fd: int, inode: Optional[str]) -> Tuple[int, str, str]:
    """After a truncation: the new content's fingerprint and identity, read from 0."""
    length, crc = _fresh(fd)
    os.lseek(fd, 0, os.SEEK_SET)
    return length, crc, "%s:%d:%s" % (inode, length, crc)


def main() -> None:
    path, offset, identity = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    out = sys.stdout.buffer
    try:
        for event in follow(path, offset, identity):
            # Every event, heartbeats included, is a write: when the SSH session is gone
            # the write fails and this process ends (no orphan left on the host).
            out.write(encode(event))
            out.flush()
    except (BrokenPipeError, KeyboardInterrupt):
        pass


if __name__ == "__main__":
    main()
