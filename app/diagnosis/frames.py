"""The frame to patch: the innermost frame of the failing traceback outside the standard
library (site-packages count: they are someone's code)."""

import re
from dataclasses import dataclass

from app.diagnosis import rules
from app.diagnosis.entry import Entry

FOLLOW_UP_LINES = 60  # a line logged before its traceback: how far the frames may follow
# (a log that lost its newlines glues the quoted source after the function's name)
_FRAME_LINE = re.compile(
    r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<function>[\w<>.]+))?'
)
# The standard library: an interpreter's lib/python3.X/ (Windows' Python3XY\Lib\) outside
# site- and dist-packages, and frozen modules. Site-packages frames are someone's code to
# patch, so they count.
_STDLIB = re.compile(
    r"(?:^|[/\\])lib[/\\]python3(?:\.\d+)?[/\\](?!(?:site|dist)-packages[/\\])|^<frozen "
    r"|[/\\]Python3\d*[/\\]Lib[/\\](?!site-packages[/\\])"
)


_LOGGING = re.compile(r"(?:^|[/\\])logging[/\\](?:__init__|handlers)\.py$")


def raised_in_logging(content: str, so_far: bool) -> bool:
    """Whether a traceback's innermost frame, this line included, is the logging module's: a
    frame of logging says so, a frame of the code that logging called (a record's argument,
    the object it formats) says not, the rest of the standard library leaves it as it was."""
    match = _FRAME_LINE.match(content)
    if match is None:
        return so_far
    if _LOGGING.search(match["file"]):
        return True
    return so_far and _STDLIB.search(match["file"]) is not None


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str | None


def _is_frame_part(entries: list[Entry], index: int) -> bool:
    """A frame line, a caret line under one, or the source line a frame quotes."""
    content = entries[index].content
    if _FRAME_LINE.match(content) or rules.FRAME.search(content):
        return True
    return index > 0 and _FRAME_LINE.match(entries[index - 1].content) is not None


def _adjacent(first: Entry, second: Entry) -> bool:
    return 0 <= second.line.number - first.line.number <= 1  # a log that lost its newlines


def failing_traceback(entries: list[Entry], root: Entry) -> list[Entry]:
    """The frames right above the root cause (a fragment may start without its Traceback
    header); for a line logged before its traceback (vLLM's repr of the exception, a native
    abort), the frames that closely follow it."""
    index = entries.index(root)
    start = index
    while start > 0 and _adjacent(entries[start - 1], entries[start]):
        if not _is_frame_part(entries, start - 1):
            break
        start -= 1
    if start < index:
        return entries[start:index]
    for later in range(index + 1, min(len(entries), index + 1 + FOLLOW_UP_LINES)):
        if _FRAME_LINE.match(entries[later].content):
            end = later
            while end + 1 < len(entries) and _adjacent(entries[end], entries[end + 1]):
                if not _is_frame_part(entries, end + 1):
                    break
                end += 1
            return entries[later : end + 1]
        if entries[later].strength >= 2:
            break  # another failure first: no frames of this one
    return []


def innermost_frame(traceback: list[Entry]) -> Frame | None:
    """The innermost frame outside the standard library: the code to open and patch."""
    for entry in reversed(traceback):
        match = _FRAME_LINE.match(entry.content)
        if match and not _STDLIB.search(match["file"]):
            return Frame(match["file"], int(match["line"]), match["function"])
    return None
