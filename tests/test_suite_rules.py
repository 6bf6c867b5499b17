"""Rules the suite keeps so that a test passes whatever ran before it in its worker."""

import re
from pathlib import Path

TESTS = Path(__file__).parent


def test_no_test_starts_an_event_loop_in_the_workers_main_thread() -> None:
    # After a browser test, Playwright's loop runs in the worker's main thread for the rest
    # of the session and asyncio.run refuses to start there: tests.helpers.run_apart runs a
    # coroutine on a thread of its own (a test that needs the thread itself starts one).
    offending = [
        f"{path.name}:{number}"
        for path in sorted(TESTS.glob("*.py"))
        if path.name != "helpers.py"
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if re.search(r"\basyncio\.run\(|run_until_complete\(", line)
        and "threading.Thread(" not in line
    ]
    assert offending == []
