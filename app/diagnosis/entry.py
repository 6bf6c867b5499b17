"""One kept line as the analysis sees it: its text without prefixes, and what it says."""

from dataclasses import dataclass

from app.diagnosis.scanner import Line


@dataclass(eq=False)  # one entry per kept line: compared by identity (list.index is fast)
class Entry:
    line: Line
    text: str
    content: str
    noise: bool = False
    in_traceback: int | None = None  # index of the traceback's first line
    strength: int = 0  # 0: not a failure, 1: wrapper, 2: logged error, 3: failure
    consequence: bool = False
    warning: bool = False  # an error by its shape that a process may live through
    # An exception quoted inside a "--- Logging error ---" block that logging did not raise:
    # the explanation when nothing outside the block says more.
    quoted: bool = False
    peer_gone: bool = False  # "connection closed by peer": the peer failed first
    detail: bool = False  # the specific line a summarising exception points to
    level: str | None = None  # the severity its prefix carries: "info" (up to WARNING), "error"
    # Why a failure-shaped line was set aside (the program says it lived through it...): what
    # the diagnosis says when the log ends on it.
    set_aside: str = ""
    set_aside_strength: int = 0  # the strength it had before (a failure, or only a wrapper)

    @property
    def prefix(self) -> str:
        """What loggers, launchers and viewers put before the message."""
        cut = self.text.find(self.content) if self.content else -1
        return self.text[:cut] if cut > 0 else ""
