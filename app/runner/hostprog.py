"""The runner's program on the GPU host: start, status, wait, preflight, health, stop.

Standard library only and Python 3.6 compatible, like the follower: its code is sent on
stdin to `python3 -c BOOTSTRAP N serve` over an SSH exec channel (or run locally as a
subprocess for `local`), and it answers each request line with one JSON object. It is
several files sent as one program, in the order of app/runner/hosts.py's PROGRAM_FILES,
each using only what comes before it: host_proc.py (/proc, JSON records), host_gpus.py
(nvidia-smi), host_results.py (a benchmark's result file), host_jobs.py (start, status,
wait, health), host_checks.py (preflight, stop and its proof), then this request loop.

Every job (the server, each benchmark run) runs under a small wrapper in a session of its
own, detached from the channel, with files in the run directory: NAME.json (pid, session,
boot id, command, log, start time), NAME.log (its stdout and stderr), NAME.exit (how it
ended, written by the wrapper) and, for a benchmark that writes a result file,
NAME.watch.json (that file as it was before the job).
"""

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
