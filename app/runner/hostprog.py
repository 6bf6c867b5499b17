"""The runner's program on the GPU host, its request loop: one JSON request a line in (start,
status, wait, preflight, health, stop), one JSON answer out. Standard library only, Python
3.6 compatible; sent with the files before it as one program (hosts.PROGRAM_FILES)."""

import json
import sys

if __name__ != "__main__":
    # Run on a host, this file's code comes last: every command is already there.
    from app.runner.host_checks import preflight, stop
    from app.runner.host_jobs import _reap_wrappers, health, start, status, wait
    from app.runner.host_proc import Answer

COMMANDS = {
    "start": start,
    "status": status,
    "wait": wait,
    "preflight": preflight,
    "health": health,
    "stop": stop,
}


def answer(command: str, args: Answer) -> Answer:
    try:
        return COMMANDS[command](args)
    except Exception as error:  # one JSON answer whatever happens: the caller reads it
        return {"error": "%s: %s" % (type(error).__name__, error)}


def serve() -> None:
    """One request per line on stdin ({"command", "args"}), one answer per line: a driver
    asks its host many times a second without starting a process each time. Ends with
    stdin (the channel closed, or the dashboard gone)."""
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            reply = answer(request["command"], request.get("args") or {})
        except (ValueError, KeyError, TypeError) as error:
            reply = {"error": "bad request: %s" % error}
        _reap_wrappers()
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def main() -> None:
    if sys.argv[1] == "serve":
        serve()
        return
    args = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    sys.stdout.write(json.dumps(answer(sys.argv[1], args)) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
