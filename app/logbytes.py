"""Whether a file handed over as a log is text at all (the CLI's diagnose and seen --log)."""

SNIFF_BYTES = 8192


def not_text(chunk: bytes) -> bool:
    """Whether a log's first bytes are binary (a compressed rotation, a core file): a third
    of them undecodable or control characters. The NULs a copytruncate leaves at the start
    are skipped, and a stray NUL or bad byte in a line does not count: that is still a log."""
    text = chunk.lstrip(b"\0")[:SNIFF_BYTES].decode("utf-8", "replace")
    odd = sum(1 for c in text if c == "\ufffd" or (c < " " and c not in "\t\n\r\x1b\b\f"))
    return odd * 3 > len(text)


# Compressed logs by their first bytes (a rotated log.gz, say): what they are, and the
# command that unpacks one to standard output.
_COMPRESSED = (
    (b"\x1f\x8b", ("gzip-compressed", "zcat")),
    (b"BZh", ("bzip2-compressed", "bzcat")),
    (b"\xfd7zXZ\x00", ("xz-compressed", "xzcat")),
    (b"\x28\xb5\x2f\xfd", ("zstd-compressed", "zstdcat")),
)


class TextCheck:
    """A log read chunk by chunk: its first bytes that are not NULs say, once, whether it is
    text. `command` is what a compressed log should be unpacked into."""

    def __init__(self, name: str, command: str, *, piped: bool = False) -> None:
        self.name, self.command, self.done = name, command, False
        self.piped = piped  # read from standard input: the hint names a file to unpack

    def refusal(self, chunk: bytes) -> str | None:
        """Why this log is refused ("No crash seen" would pass it as a healthy server's)."""
        if self.done or not chunk.strip(b"\0"):
            return None
        self.done = True
        if not not_text(chunk):
            return None
        start = chunk.lstrip(b"\0")
        packed = next((n for magic, n in _COMPRESSED if start.startswith(magic)), None)
        if packed is None:
            return f"{self.name} is not a text log: it holds binary data"
        kind, unpack = packed
        source = "FILE" if self.piped else self.name
        return (
            f"{self.name} is not a text log: it is {kind} "
            f"(unpack it: {unpack} {source} | campaign-dash {self.command} -)"
        )

    def never_decided(self, bytes_read: int) -> str | None:
        """Why a log that held bytes but nothing besides NULs is refused: a file truncated in
        place before anything new was written, or no log at all ("no crash seen" would pass
        it as a healthy server's)."""
        if self.done or not bytes_read:
            return None
        return f"{self.name} is not a text log: it holds only NUL bytes"
