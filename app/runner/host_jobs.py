"""Jobs on the GPU host (the server, each benchmark run): started detached under a wrapper
of their own, looked at, waited for. Part of the runner's host program
(app/runner/hostprog.py): standard library only, Python 3.6 compatible."""

import json
import os
import select
import signal
import subprocess
import time
from typing import List

if __name__ != "__main__":
    # Run on a host, this file's code comes after host_proc.py's and host_results.py's.
    from app.runner.host_proc import (
        Answer,
        _alive,
        _read_json,
        _shm_names,
        _size,
        _tail,
        _write_json,
        boot_id,
        session_members,
        start_time,
    )
    from app.runner.host_results import _watch, result_file

# Every job runs under a small wrapper in a session of its own, detached from the channel,
# with files in the run directory: NAME.json (pid, session, boot id, command, log, start
# time), NAME.log (its stdout and stderr), NAME.exit (how it ended, written by the wrapper)
# and, for a benchmark that writes a result file, NAME.watch.json (that file before the job).
RUNS_ROOT = "~/.campaign-dash/runs"
STARTED_WAIT_S = 10.0
OUTPUT_TAIL_BYTES = 256 << 10

PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> None:
    """The job's orphans (a server's workers once it is gone) are reparented to the wrapper,
    which reaps them at once: some inits reap only every second, and until then a zombie is
    still a process of the job's session."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: init reaps them, and stop() waits for it


def _detach(keep: int, stderr_path: str) -> None:
    """The forked wrapper leaves the channel behind: its own session, stdin and stdout
    /dev/null, no descriptor of the program's but `keep`."""
    os.setsid()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    err = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(err, 2)
    try:
        fds = [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 256))
    for fd in fds:
        if fd > 2 and fd != keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _wrapper(run_dir: str, name: str, ready_fd: int) -> None:
    """The job's wrapper, forked from this program (no Python to start on a loaded host):
    it stays outside the job's session, so a SIGKILL of the whole session leaves it alive
    to write how the job ended; it ends when the job's last orphan has been reaped."""
    base = os.path.join(run_dir, name)
    _detach(ready_fd, base + ".wrapper.log")
    _become_subreaper()
    with open(base + ".spec") as f:
        spec = json.load(f)
    log = open(spec["log_path"], "ab", buffering=0)
    child = subprocess.Popen(
        ["/bin/sh", "-c", spec["command"]],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        cwd=spec.get("cwd") or None,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )
    log.close()
    record = dict(spec, pid=child.pid, pgid=child.pid, sid=child.pid, wrapper_pid=os.getpid(),
                  leader_start=start_time(child.pid), started_at=time.time())  # fmt: skip
    _write_json(base + ".json", record)
    os.write(ready_fd, b"1")
    os.close(ready_fd)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == child.pid:
            signalled = os.WIFSIGNALED(status)
            code = 128 + os.WTERMSIG(status) if signalled else os.WEXITSTATUS(status)
            ended = {"exit_code": code, "signal": os.WTERMSIG(status) if signalled else None,
                     "ended_at": time.time()}  # fmt: skip
            _write_json(base + ".exit", ended)


def _job(run_dir: str, name: str) -> Answer:
    """What the files of one job say, and whether its session still has a process."""
    base = os.path.join(run_dir, name)
    record = _read_json(base + ".json")
    if record is None:
        started = os.path.exists(base + ".spec")
        return {"name": name, "exists": started, "started": False, "alive": False}
    ended = _read_json(base + ".exit")
    now_boot = boot_id()
    rebooted = bool(record.get("boot_id") and now_boot and record["boot_id"] != now_boot)
    members = [] if rebooted else session_members(int(record["sid"]))
    answer = dict(record)
    answer.update(
        exists=True,
        started=True,
        alive=bool(members),
        # The job's own process still runs (its children may outlive it: `alive` says so).
        running=ended is None and bool(members),
        members=members,
        rebooted=rebooted,
        exit=ended,
        log_size=_size(record.get("log_path", "")),
    )
    # The wrapper gone without a word (killed, or the host rebooted): how it ended is lost.
    lost = ended is None and not members and not _alive(record.get("wrapper_pid"))
    if lost:
        # It writes NAME.exit just before it ends: gone since the first read, it has said.
        ended = _read_json(base + ".exit")
        answer["exit"], lost = ended, ended is None
    answer["lost"] = lost
    return answer


def run_dir_of(args: Answer) -> str:
    run_dir = os.path.abspath(os.path.expanduser(args["run_dir"]))
    return run_dir


def start(args: Answer) -> Answer:
    """Start `command` as job `name` of the run directory, detached; wait until it runs."""
    run_dir = run_dir_of(args)
    name = args["name"]
    os.makedirs(run_dir, mode=0o700, exist_ok=True)
    base = os.path.join(run_dir, name)
    if os.path.exists(base + ".spec"):
        return dict(_job(run_dir, name), already=True)
    spec = {
        "run_id": args.get("run_id"),
        "name": name,
        "command": args["command"],
        "log_path": base + ".log",
        "cwd": os.path.expanduser(args.get("cwd") or "~"),
        "boot_id": boot_id(),
        "shm_before": _shm_names(),
    }
    if args.get("watch"):
        # What the result file (or folder) holds before the job: its own record is what
        # changes after. Kept apart from NAME.json, which every look reads.
        _write_json(base + ".watch.json", _watch(spec["cwd"], args["watch"]))
    with open(base + ".spec", "w") as f:
        json.dump(spec, f)
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        code = 0
        try:
            _wrapper(run_dir, name, ready_w)
        except BaseException:
            import traceback

            traceback.print_exc()  # into NAME.wrapper.log: start() shows it
            code = 1
        finally:
            os._exit(code)
    os.close(ready_w)
    _STARTED.append(pid)
    # The wrapper says when the job's record is written (or ends without a word).
    readable, _, _ = select.select([ready_r], [], [], STARTED_WAIT_S)
    os.close(ready_r)
    job = _job(run_dir, name)
    if job["started"]:
        return job
    return {
        "error": "the job did not start in %d s: %s"
        % (STARTED_WAIT_S, _tail(base + ".wrapper.log", 2000).strip() or "no word from its wrapper")
        if not readable
        else "the job did not start: %s"
        % (_tail(base + ".wrapper.log", 2000).strip() or "its wrapper ended without a word")
    }


def status(args: Answer) -> Answer:
    run_dir = run_dir_of(args)
    jobs = {}
    for name in args.get("names") or ["server"]:
        job = _job(run_dir, name)
        if args.get("output") and job.get("log_path") and job.get("exit") is not None:
            job["output"] = _tail(job["log_path"], OUTPUT_TAIL_BYTES)
            if os.path.exists(os.path.join(run_dir, name + ".watch.json")):
                job["result_file"] = result_file(run_dir, name)
        jobs[name] = job
    answer = {"boot_id": boot_id(), "run_dir": run_dir, "jobs": jobs}
    if args.get("health_url"):
        # Asked in the same call: one round trip per look while a server starts.
        answer["health"] = health({"url": args["health_url"], "timeout": 2})
    return answer


def wait(args: Answer) -> Answer:
    """`status` once the job `name` has ended or the server stopped running, or after
    `timeout` seconds: a benchmark's end is heard within milliseconds, in one round trip
    instead of a look every 0.1 s."""
    run_dir = run_dir_of(args)
    name = args["name"]
    exit_path = os.path.join(run_dir, name + ".exit")
    server_exit = os.path.join(run_dir, "server.exit")
    deadline = time.time() + min(float(args.get("timeout", 1.0)), 10.0)
    pause = 0.005
    next_full_look = 0.0
    while time.time() < deadline:
        # The files say most of it (cheap); /proc, which sees a job whose wrapper was
        # killed, is read every 0.25 s.
        if os.path.exists(exit_path) or os.path.exists(server_exit):
            break
        if time.time() >= next_full_look:
            next_full_look = time.time() + 0.25
            job, server = _job(run_dir, name), _job(run_dir, "server")
            if job.get("lost") or not server.get("running"):
                break
        time.sleep(pause)
        pause = min(pause * 2, 0.02)
    return status(dict(args, names=["server", name]))


def health(args: Answer) -> Answer:
    """GET the URL from the host itself (a server listening on 127.0.0.1 only answers there)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(args["url"], timeout=float(args.get("timeout", 2))) as reply:
            return {"ok": 200 <= reply.status < 300, "status": reply.status}
    except urllib.error.HTTPError as error:
        return {"ok": False, "status": error.code, "error": "HTTP %d" % error.code}
    except (OSError, ValueError) as error:
        return {"ok": False, "status": None, "error": str(getattr(error, "reason", error))}


# Wrappers this program forked: reaped as they end, so a long `serve` leaves no zombie.
_STARTED: List[int] = []


def _reap_wrappers() -> None:
    for pid in list(_STARTED):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _STARTED.remove(pid)
