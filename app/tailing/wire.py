"""The framing between the remote follower (stdout) and the ssh:// source (its channel).

One header line per event, "KIND FIELD...", then the bytes of a data event: "D OFFSET LENGTH\n"
followed by LENGTH bytes. `decode(encode(event)) == event` for every event the follower yields
(see follower.py for the kinds). Standard library only and Python 3.6 compatible: its code is
sent to the host ahead of the follower's.
"""

from typing import Iterator, Optional, Tuple

Frame = Tuple

# The writer check's answer: a process holds the file open for writing, none does, unknown.
_WRITER = {True: "1", False: "0", None: "-"}
_WRITER_OF = {text: value for value, text in _WRITER.items()}


def encode(event: Frame) -> bytes:
    kind = event[0]
    if kind == "D":
        return b"D %d %d\n" % (event[1], len(event[2])) + event[2]
    if kind == "O":
        return ("O %s\n" % _WRITER[event[1]]).encode()
    # Messages are the last field and may hold spaces; a newline would end the header.
    return (" ".join(str(part) for part in event).replace("\n", " ") + "\n").encode()


def _fields(kind: str, rest: str) -> Frame:
    if kind == "E":
        errno, _, message = rest.partition(" ")
        return ("E", int(errno), message)
    if kind == "N":
        return ("N", rest)
    if kind == "I":
        identity, _, size = rest.partition(" ")
        return ("I", identity, int(size))
    if kind == "H":
        return ("H", int(rest))
    if kind in ("R", "T"):
        return (kind, rest) if rest else (kind,)
    if kind == "W":
        return ("W",)
    if kind == "O":
        return ("O", _WRITER_OF[rest])
    raise ValueError("not a follower frame: %r" % kind)


class Decoder:
    """Bytes in as they arrive, whole frames out: `feed()`, then iterate `frames()`."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self._header: Optional[Tuple[int, int]] = None  # a data frame's (offset, length)

    def feed(self, data: bytes) -> None:
        self.buffer += data

    def frames(self) -> Iterator[Frame]:
        """Every frame the buffer holds whole; what is left waits for more bytes."""
        while True:
            if self._header is not None:
                offset, length = self._header
                if len(self.buffer) < length:
                    return
                data = bytes(self.buffer[:length])
                del self.buffer[:length]
                self._header = None
                yield ("D", offset, data)
                continue
            newline = self.buffer.find(b"\n")
            if newline < 0:
                return
            header = bytes(self.buffer[:newline]).decode("utf-8", "replace")
            del self.buffer[: newline + 1]
            kind, _, rest = header.partition(" ")
            if kind == "D":
                start, _, size = rest.partition(" ")
                self._header = (int(start), int(size))
                continue
            yield _fields(kind, rest)
