"""The lines around one line of a source file: the code a traceback's frame points at.

Standard library only and Python 3.6 compatible, like the follower: called in-process for
file:// sources and sent verbatim to the remote host for ssh:// ones, where
`python3 - PATH LINE` runs `main()` and prints one JSON object. The path is an argument,
opened as it is: no shell ever sees it. Read-only, and every read is capped.

Answer: {"first_line": N, "lines": [...], "truncated": bool}, or {"error": KIND, "message": ...}
with KIND one of not_found, permission, not_regular, refused, binary, past_end, too_far, error.
"""

import errno
import io
import json
import os
import stat
import sys
from typing import Any, Callable, Dict, List, Optional

CONTEXT_LINES = 15
# How far into a file the line is looked for: past every real source file (the largest of
# PyTorch's are a few MiB), and a bound on what a huge file named in a log costs.
MAX_SCAN_BYTES = 16 << 20
# What the answer may carry, whatever the file holds (minified code, one-line JSON...).
MAX_KEPT_BYTES = 64 << 10
MAX_LINE_CHARS = 400
# A piece of a line read at once: enough bytes for MAX_LINE_CHARS characters of UTF-8.
_PIECE_BYTES = MAX_LINE_CHARS * 4
# Made up at each read (a process's environment among them): never code to show.
PSEUDO_ROOTS = ("/proc", "/sys")

Refusal = Callable[[str, os.stat_result], Optional[str]]
Answer = Dict[str, Any]


def _problem(kind: str, message: str) -> Answer:
    return {"error": kind, "message": message}


def _os_problem(path: str, error: OSError) -> Answer:
    if error.errno == errno.ENOENT:
        return _problem("not_found", "%s: no such file" % path)
    if error.errno in (errno.EACCES, errno.EPERM):
        return _problem("permission", "%s: permission denied" % path)
    if error.errno == errno.ENOTDIR:
        return _problem("not_found", "%s: a part of the path is not a folder" % path)
    return _problem("error", "%s: %s" % (path, error.strerror or error))


def _not_readable(path: str, st: os.stat_result, refuse: Optional[Refusal]) -> Optional[Answer]:
    # Only regular files: opening a FIFO blocks, a device may act on a read.
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        return _problem("not_regular", "%s is %s" % (path, kind))
    real = os.path.realpath(path)
    for root in PSEUDO_ROOTS:
        if real == root or real.startswith(root + "/"):
            return _problem("refused", "%s is a kernel pseudo-file (%s), not code" % (path, root))
    reason = refuse(path, st) if refuse is not None else None
    return _problem("refused", reason) if reason else None


def read_window(
    path: str, line: int, context: int = CONTEXT_LINES, refuse: Optional[Refusal] = None
) -> Answer:
    """Lines `line - context` to `line + context` of `path`, each cut at MAX_LINE_CHARS.
    `refuse(path, stat)` may name a reason not to read a file this reader must not serve."""
    if line < 1:
        return _problem("past_end", "line %d: lines count from 1" % line)
    try:
        problem = _not_readable(path, os.stat(path), refuse)
        if problem:
            return problem
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as error:
        return _os_problem(path, error)
    with io.open(fd, "rb", closefd=True) as reader:
        try:
            # Swapped between the look and the open: look again at what was opened.
            problem = _not_readable(path, os.fstat(fd), refuse)
            return problem or _window(path, reader, line, context)
        except OSError as error:
            return _os_problem(path, error)


def _window(path: str, reader: io.BufferedReader, line: int, context: int) -> Answer:
    first, last = max(1, line - context), line + context
    lines: List[str] = []
    truncated = False
    scanned = kept = number = 0
    while number < last and scanned <= MAX_SCAN_BYTES:
        piece = reader.readline(_PIECE_BYTES)
        if not piece:
            break
        number += 1
        scanned += len(piece)
        long_line, rest = False, piece
        while len(rest) == _PIECE_BYTES and not rest.endswith(b"\n"):
            if scanned > MAX_SCAN_BYTES:
                break
            # The rest of a long line is skipped; its bytes still count against the cap.
            rest = reader.readline(_PIECE_BYTES)
            scanned += len(rest)
            long_line = long_line or bool(rest)
            if b"\0" in rest:
                return _problem("binary", "%s is not a text file" % path)
        if b"\0" in piece:
            return _problem("binary", "%s is not a text file" % path)
        if number < first:
            continue
        text = piece.rstrip(b"\r\n").decode("utf-8", "replace")
        if long_line or len(text) > MAX_LINE_CHARS:
            text, truncated = text[:MAX_LINE_CHARS], True
        kept += len(text.encode("utf-8"))
        if kept > MAX_KEPT_BYTES:
            truncated = True
            break
        lines.append(text)
    if first + len(lines) <= line:  # the failing line is not among them
        if scanned > MAX_SCAN_BYTES or kept > MAX_KEPT_BYTES:
            return _problem(
                "too_far",
                "line %d of %s lies past its first %d MiB: not read"
                % (line, path, MAX_SCAN_BYTES >> 20),
            )
        return _problem(
            "past_end",
            "%s has %d lines: line %d is past its end (changed since the log was written?)"
            % (path, number, line),
        )
    if number < last and scanned > MAX_SCAN_BYTES:
        truncated = True
    return {"first_line": first, "lines": lines, "truncated": truncated}


def main() -> None:
    path, line = sys.argv[1], int(sys.argv[2])
    answer = read_window(path, line)
    sys.stdout.buffer.write(json.dumps(answer, ensure_ascii=False).encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
