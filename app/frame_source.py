"""The code a diagnosis's frame points at, read from the host its log comes from: over the
tails' SSH pool for ssh:// sources, from this machine's disk for file:// ones (never the
dashboard's own files). Blocking: callers run it in a worker thread."""

import os
from pathlib import Path
from typing import Any

from app.schemas import FrameSourceOut
from app.tailing import code_window
from app.tailing.factory import LogSources
from app.tailing.file_source import own_file
from app.tailing.sources import BadSource, HostUnavailable, SourceURL, parse_source
from app.tailing.status import TailStatus

HELPER_CODE = Path(code_window.__file__).read_bytes()
# The helper's JSON: its 64 KiB of lines, escaped, and whatever a login script prints.
MAX_ANSWER_BYTES = 1 << 20

# The helper's kinds of refusal, as HTTP says them.
_STATUS = {
    "not_found": 404,
    "past_end": 404,
    "permission": 403,
    "refused": 403,
    "not_regular": 422,
    "binary": 422,
    "too_far": 422,
}


class SourceNotShown(Exception):
    """Why the code cannot be shown, with the HTTP status that says so."""

    def __init__(self, status_code: int, detail: str) -> None:
        self.status_code, self.detail = status_code, detail
        super().__init__(detail)


def read_frame_source(
    sources: LogSources, source: str | None, frame: dict[str, Any] | None
) -> FrameSourceOut:
    """The lines around `frame` ({file, line, function}) on the host of `source`, asked
    over the connections of `sources` (the app's: the tail's connection to that host)."""
    if not frame:
        raise SourceNotShown(404, "the diagnosis names no frame of a traceback to show")
    if not source:
        raise SourceNotShown(409, "the attempt has no log source: no host to read the code from")
    path, line = str(frame["file"]), int(frame["line"])
    if not path.startswith("/") or "\0" in path:
        raise SourceNotShown(
            422, f"{path} is not an absolute path: where the process ran from is not known"
        )
    try:
        url = parse_source(source)
    except BadSource as error:
        raise SourceNotShown(409, f"the attempt's log source: {error}") from None
    if url.scheme == "file":
        host = "this machine"
        answer = code_window.read_window(path, line, refuse=_own_files_refusal(sources))
    else:
        host = url.host_label
        answer = _read_remote(sources, url, path, line)
    if "error" in answer:
        status = _STATUS.get(str(answer["error"]), 502)
        raise SourceNotShown(status, f"{host}: {answer.get('message')}")
    return FrameSourceOut(
        file=path,
        line=line,
        function=frame.get("function"),
        host=host,
        first_line=int(answer["first_line"]),
        lines=[str(text) for text in answer["lines"]],
        truncated=bool(answer["truncated"]),
    )


def _own_files_refusal(sources: LogSources) -> code_window.Refusal:
    protected = sources.protected

    def refuse(path: str, st: os.stat_result) -> str | None:
        if own_file(path, st, protected):
            return f"{path} is one of the dashboard's own files: it is never shown"
        return None

    return refuse


def _read_remote(sources: LogSources, url: SourceURL, path: str, line: int) -> dict[str, Any]:
    try:
        result = sources.ssh(url).run_program(
            HELPER_CODE, [path, str(line)], max_output=MAX_ANSWER_BYTES
        )
    except HostUnavailable as error:
        untrusted = error.state == TailStatus.host_key_not_trusted
        hint = ": trust it from the log panel first" if untrusted else ""
        status = 504 if error.state == TailStatus.no_answer else 502
        said = str(error) if str(error).startswith(error.state) else f"{error.state}: {error}"
        raise SourceNotShown(status, f"{url.host_label}: {said}{hint}") from None
    if result.status == 127:
        raise SourceNotShown(502, f"{url.host_label}: python3 not found: showing code needs it")
    answer = result.answer()
    if answer is None:
        why = result.why_not("an answer it cannot read")
        raise SourceNotShown(502, f"{url.host_label}: reading the code failed: {why}")
    return answer
