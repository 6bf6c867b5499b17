"""Whether a file handed over as a log is text at all (the CLI's diagnose and seen --log)."""

SNIFF_BYTES = 8192


def not_text(chunk: bytes) -> bool:
    """Whether a log's first bytes are binary (a compressed rotation, a core file): a third
    of them undecodable or control characters. The NULs a copytruncate leaves at the start
    are skipped, and a stray NUL or bad byte in a line does not count: that is still a log."""
    text = chunk.lstrip(b"\0")[:SNIFF_BYTES].decode("utf-8", "replace")
    odd = sum(1 for c in text if c == "\ufffd" or (c < " " and c not in "\t\n\r\x1b\b\f"))
    return odd * 3 > len(text)
