"""How a run's driver hears that something concerning its run happened (its attempt changed,
a stop was asked for, a queue moved, the dashboard stops) without looking: a count it waits
past, so a wake that comes while it is busy reading is never lost."""

import threading


class Wake:
    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._count = 0

    def set(self) -> None:
        """Something happened. Called from the commit hook too: it only takes the lock a
        waiter holds for an instant, never waits on anything else."""
        with self._condition:
            self._count += 1
            self._condition.notify_all()

    def count(self) -> int:
        """Taken before reading what changed: anything set after it wakes the next wait."""
        with self._condition:
            return self._count

    def wait(self, seen: int, timeout_s: float) -> int:
        """Until the count is past `seen` (returned at once if it already is) or `timeout_s`
        passed; the count then."""
        with self._condition:
            self._condition.wait_for(lambda: self._count != seen, max(0.0, timeout_s))
            return self._count
