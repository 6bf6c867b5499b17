"""How a launched run ended (`run.outcome`): try's exit status for it, whether the server
or its benchmark failed. The values are the contract (stored rows, the API, try's output):
a value never changes; a new outcome is a new member, with its row in _TABLE."""

from enum import StrEnum

# `campaign-dash try`'s exit status: 0 measured or ready, 1 the server or the benchmark
# failed (or was stopped), 2 refused, or the infrastructure failed.
EXIT_OK, EXIT_FAILED, EXIT_REFUSED = 0, 1, 2


class RunOutcome(StrEnum):
    measured = "measured"
    ready = "ready"
    crashed = "crashed"
    ready_timeout = "ready_timeout"
    bench_failed = "bench_failed"
    server_died = "server_died"
    stopped = "stopped"
    refused = "refused"
    host_rebooted = "host_rebooted"
    infrastructure = "infrastructure"

    @property
    def exit_code(self) -> int:
        return _TABLE[self][0]

    @property
    def failed(self) -> bool:
        """The server or its benchmark failed: a stop picked up halfway ends the run
        `failed`, not `done`."""
        return _TABLE[self][1]

    @classmethod
    def read(cls, value: str | None) -> "RunOutcome | None":
        """The member of a value read from elsewhere (a newer dashboard's API may say one
        this version does not know: None)."""
        try:
            return cls(value) if value is not None else None
        except ValueError:
            return None


# Each outcome: try's exit status, and whether the server or its benchmark failed.
_TABLE: dict[RunOutcome, tuple[int, bool]] = {
    RunOutcome.measured: (EXIT_OK, False),
    RunOutcome.ready: (EXIT_OK, False),
    RunOutcome.crashed: (EXIT_FAILED, True),
    RunOutcome.ready_timeout: (EXIT_FAILED, True),
    RunOutcome.bench_failed: (EXIT_FAILED, True),
    RunOutcome.server_died: (EXIT_FAILED, True),
    RunOutcome.stopped: (EXIT_FAILED, False),
    RunOutcome.refused: (EXIT_REFUSED, False),
    RunOutcome.host_rebooted: (EXIT_REFUSED, False),
    RunOutcome.infrastructure: (EXIT_REFUSED, False),
}


# A failed run's outcome in words, where the attempt's status alone would not say it.
_FAILED_WORDS = {
    RunOutcome.bench_failed: "its benchmark failed",
    RunOutcome.ready_timeout: "not ready in time",
    RunOutcome.server_died: "its server died",
}
_STATUSES_SILENT_ON_A_RUN = {"proposed", "running", "ready"}


def run_failure(status: str, outcome: str | None) -> str | None:
    """What a launched run's failure adds to its attempt's status: "ready" alone reads as a
    server up and waiting to be measured, when its benchmark failed and it was stopped."""
    known = RunOutcome.read(outcome)
    if status not in _STATUSES_SILENT_ON_A_RUN or known is None:
        return None
    return _FAILED_WORDS.get(known)
