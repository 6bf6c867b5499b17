"""The runner's program on the GPU host: start, status, wait, preflight, health, stop.

Standard library only and Python 3.6 compatible, like the follower: sent on stdin to
`python3 - SUBCOMMAND JSON` over an SSH exec channel (or run locally as a subprocess for
`local`); prints one JSON object. Every job (the server, each benchmark run) runs under a
small wrapper in a session of its own, detached from the channel, with files in the run
directory: NAME.json (pid, session, boot id, command, log, start time), NAME.log (its
stdout and stderr), NAME.exit (how it ended, written by the wrapper) and, for a benchmark
that writes a result file, NAME.watch.json (that file as it was before the job).
"""

import errno
import json
import os
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

Answer = Dict[str, Any]
RUNS_ROOT = "~/.campaign-dash/runs"
STARTED_WAIT_S = 10.0
KILL_WAIT_S = 10.0
PORT_WAIT_S = 10.0
GPU_WAIT_S = 30.0
# GPU memory within this much of what it was before the launch counts as given back.
GPU_SLACK_MIB = 256
OUTPUT_TAIL_BYTES = 256 << 10
# A benchmark's result file is read whole (vLLM's with --save-detailed holds every request):
# past this it is not sent, and the printed result stands.
RESULT_FILE_BYTES = 16 << 20

PR_SET_CHILD_SUBREAPER = 36


def start_time(pid: int) -> Optional[str]:
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _write_json(path: str, body: Answer) -> None:
    with open(path + ".tmp", "w") as f:
        json.dump(body, f)
    os.rename(path + ".tmp", path)


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


def boot_id() -> Optional[str]:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return None


def _read_json(path: str) -> Optional[Answer]:
    try:
        with open(path) as f:
            body = json.load(f)
        return body if isinstance(body, dict) else None
    except (OSError, ValueError):
        return None


def _processes() -> List[List[str]]:
    """[pid, state, ppid, pgrp, session, ..., comm] of every process, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                raw = f.read()
        except OSError:
            continue
        head, _, rest = raw.rpartition(")")
        fields = rest.split()
        comm = head.partition("(")[2]
        found.append([entry, *fields, comm])
    return found


def session_members(sid: int, zombies: bool = False) -> List[Answer]:
    """Processes of the session `sid`; zombies (dead, holding nothing) only when asked."""
    members = []
    for fields in _processes():
        if len(fields) > 5 and fields[4] == str(sid) and (zombies or fields[1] != "Z"):
            members.append({"pid": int(fields[0]), "comm": fields[-1]})
    return members


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


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except OSError as error:
        return error.errno == errno.EPERM
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _size(path: str) -> Optional[int]:
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def _tail(path: str, limit: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


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


# --- a benchmark's result file ------------------------------------------------------------


def _identity(path: str) -> Optional[List[int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _listing(folder: str, suffix: str, skip: List[str]) -> Dict[str, List[int]]:
    found = {}
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                name = entry.name
                if not name.endswith(suffix) or any(name.endswith(s) for s in skip):
                    continue
                try:
                    if entry.is_file():
                        st = entry.stat()
                        found[name] = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
                except OSError:
                    continue
    except OSError:
        pass  # not there yet: vLLM creates --result-dir itself
    return found


def _watch(cwd: str, watch: Answer) -> Answer:
    """The result file's identity before the job: one path, or the files of a folder that
    a benchmark names for itself (vLLM without --result-filename)."""
    append = bool(watch.get("append"))
    if watch.get("path"):
        path = os.path.normpath(os.path.join(cwd, os.path.expanduser(watch["path"])))
        return {"path": path, "append": append, "before": _identity(path)}
    folder = os.path.normpath(os.path.join(cwd, os.path.expanduser(watch.get("dir") or ".")))
    suffix, skip = watch.get("suffix") or "", list(watch.get("skip_suffixes") or [])
    return {"dir": folder, "suffix": suffix, "skip_suffixes": skip, "append": append,
            "before": _listing(folder, suffix, skip)}  # fmt: skip


def _part_of(before: Optional[List[int]], now: List[int], append: bool) -> Optional[int]:
    """Where this job's record starts in the file, or None when the job did not touch it.
    An appended file that is the same file, not shorter, starts where it ended before."""
    if before == now:
        return None
    if before is None or not append or before[:2] != now[:2] or now[2] < before[2]:
        return 0  # new, rewritten, replaced or truncated: all of it is this job's
    return before[2]


def _changed_file(watched: Answer) -> Answer:
    """The file the job wrote, with its identity before and now, or the problem."""
    if watched.get("path"):
        path = watched["path"]
        now = _identity(path)
        if now is None:
            return {"path": path, "problem": "no file at %s" % path}
        return {"path": path, "before": watched.get("before"), "now": now}
    folder, before = watched["dir"], watched.get("before") or {}
    files = _listing(folder, watched.get("suffix", ""), watched.get("skip_suffixes", []))
    changed = [name for name, now in files.items() if now != before.get(name)]
    if not changed:
        kind = watched.get("suffix") or "new"
        return {
            "path": None,
            "problem": "no %s file in %s was written by this run" % (kind, folder),
        }
    newest = max(changed, key=lambda name: files[name][3])
    return {
        "path": os.path.join(folder, newest),
        "before": before.get(newest),
        "now": files[newest],
    }


def _read_from(path: str, offset: int) -> Answer:
    try:
        # O_NONBLOCK: a FIFO where the file should be must not hold the program.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        return {"path": path, "problem": "cannot read %s: %s" % (path, error.strerror)}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return {"path": path, "problem": "%s is not a regular file" % path}
        size = st.st_size - offset
        if size > RESULT_FILE_BYTES:
            return {
                "path": path,
                "problem": "%s: %d bytes from this run, more than the %d MiB the runner reads"
                % (path, size, RESULT_FILE_BYTES >> 20),
            }
        os.lseek(fd, offset, os.SEEK_SET)
        chunks, left = [], size
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as error:
        return {"path": path, "problem": "cannot read %s: %s" % (path, error.strerror)}
    finally:
        os.close(fd)
    return {"path": path, "offset": offset, "text": b"".join(chunks).decode("utf-8", "replace")}


def result_file(run_dir: str, name: str) -> Answer:
    """What job `name` wrote to its result file: `text` (of an appended file, only what it
    added) or the `problem` that keeps it from being read. Read-only, size-capped."""
    watched = _read_json(os.path.join(run_dir, name + ".watch.json"))
    if watched is None:
        return {"path": None, "problem": "the result file was not looked at before the run"}
    found = _changed_file(watched)
    if "problem" in found:
        return found
    offset = _part_of(found["before"], found["now"], bool(watched.get("append")))
    if offset is None:
        return {"path": found["path"], "problem": "%s was not written by this run" % found["path"]}
    return _read_from(found["path"], offset)


# --- what would poison a measurement ---------------------------------------------------


def listeners(port: int) -> List[Answer]:
    """Sockets listening on `port` (any address), with the processes holding them."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) > 9 and parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(parts[9])
    if not inodes and not os.path.exists("/proc/net/tcp"):
        return _bind_test(port)
    holders = []
    for inode in inodes:
        holders.append({"inode": inode, "pids": _socket_holders(inode)})
    return holders


def _bind_test(port: int) -> List[Answer]:
    sock = socket.socket()
    try:
        sock.bind(("0.0.0.0", port))
    except OSError:
        return [{"inode": None, "pids": []}]
    finally:
        sock.close()
    return []


def _socket_holders(inode: str) -> List[Answer]:
    wanted = "socket:[%s]" % inode
    holders = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            for fd in os.listdir("/proc/%s/fd" % entry):
                if os.readlink("/proc/%s/fd/%s" % (entry, fd)) == wanted:
                    holders.append({"pid": int(entry), "cmdline": _cmdline(entry)})
                    break
        except OSError:
            continue
    return holders


def _cmdline(pid: str) -> str:
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()[:300]
    except OSError:
        return ""


GPU_QUERY = "--query-gpu=index,uuid,memory.used,memory.total,mig.mode.current"
APP_QUERY = "--query-compute-apps=pid,process_name,used_memory,gpu_uuid"


def _smi_rows(smi: str, query: str, width: int) -> List[List[str]]:
    """One CSV query's rows, each cut into `width` cells: the process name, the one free-text
    cell, keeps any comma of its own (it is second: the cells after it are split off)."""
    done = subprocess.run(
        [smi, query, "--format=csv,noheader,nounits"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        timeout=20,
    )
    if done.returncode != 0:
        said = done.stdout.strip().splitlines()
        raise OSError("exit status %d%s" % (done.returncode, ": " + said[-1] if said else ""))
    rows = []
    for line in done.stdout.splitlines():
        first, _, rest = line.partition(",")
        cells = [first, *rest.rsplit(",", width - 2)] if rest else [first]
        if len(cells) == width:  # a warning line ("WARNING: infoROM is corrupted") is not
            rows.append([cell.strip() for cell in cells])
    return rows


def _mib(cell: str) -> Optional[int]:
    """A figure in MiB, or None for what nvidia-smi says instead: "[N/A]" (a GB10's unified
    memory, a process's under WDDM), "[Not Supported]", "[Insufficient Permissions]" (a MIG
    GPU seen from a container)."""
    figure = cell[:-3].strip() if cell.endswith("MiB") else cell
    return int(figure) if figure.isdigit() else None


def gpus() -> Answer:
    """GPU memory in use and compute processes, by nvidia-smi; `present` False without it,
    `error` when it fails (a driver it cannot reach, a field it does not know)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return {"present": False, "note": "nvidia-smi not found on the host: GPUs not checked"}
    try:
        device_rows = _smi_rows(smi, GPU_QUERY, 5)
        app_rows = _smi_rows(smi, APP_QUERY, 4)
    except (OSError, subprocess.SubprocessError) as error:
        return {"present": True, "error": "nvidia-smi failed: %s" % error}
    devices, notes = [], []
    for index, uuid, used, total, mig in device_rows:
        device = {"index": index, "uuid": uuid, "used_mib": _mib(used), "total_mib": _mib(total),
                  "mig": mig == "Enabled"}  # fmt: skip
        if device["used_mib"] is None:
            notes.append("GPU %s says %s for its memory in use: checked by its compute "
                         "processes only" % (index, used))  # fmt: skip
        devices.append(device)
    if not devices:
        return {"present": True, "error": "nvidia-smi listed no GPU"}
    by_uuid = {d["uuid"]: d["index"] for d in devices}
    processes = []
    for pid, name, used, uuid in app_rows:
        processes.append({"pid": int(pid) if pid.isdigit() else None, "name": name,
                          "used_mib": _mib(used), "gpu": by_uuid.get(uuid, uuid)})  # fmt: skip
    answer = {"present": True, "devices": devices, "processes": processes}
    if notes:
        answer["note"] = "; ".join(notes)
    return answer


def _holder(process: Answer) -> str:
    held = "%d MiB" % process["used_mib"] if process["used_mib"] is not None else "memory"
    who = "pid %d" % process["pid"] if process["pid"] is not None else "a process"
    return "%s %s holds %s on GPU %s" % (who, process["name"], held, process["gpu"])


# An idle GPU shows a few MiB in use (one driving a display, some hundreds); a server's
# weights and KV cache are gigabytes.
BUSY_MIB = 1024


def gpus_busy(gpu: Answer) -> List[str]:
    """What holds the GPUs, each said with its pid and memory. Memory in use with no process
    listed counts too: nvidia-smi in a container does not list another PID namespace's."""
    said = [_holder(p) for p in gpu["processes"]]
    for device in gpu["devices"]:
        used = device["used_mib"]
        if used is not None and used > BUSY_MIB:
            listed = any(p["gpu"] == device["index"] for p in gpu["processes"])
            said.append(
                "GPU %s has %d of %s MiB in use%s%s"
                % (device["index"], used, device["total_mib"],
                   "" if listed else " by no process nvidia-smi lists here",
                   " (MIG: all its instances)" if device["mig"] else "")
            )  # fmt: skip
    return said


def only_visible(gpu: Answer, visible: Optional[str]) -> Answer:
    """The GPUs a CUDA_VISIBLE_DEVICES names (nvidia-smi's indices, which are CUDA's on a host
    of one kind of GPU, or UUIDs and their prefixes) and what runs on them; all of them when
    it is unset or names one nvidia-smi does not list (a MIG instance): better a refusal
    that names another job's GPU than a launch onto one in use."""
    if visible is None or not gpu.get("devices"):
        return gpu
    names = [name.strip() for name in visible.split(",") if name.strip()]
    picked = []
    for name in names:
        uuid = name.startswith("GPU-")
        found = [d for d in gpu["devices"]
                 if d["index"] == name or (uuid and d["uuid"].startswith(name))]  # fmt: skip
        if len(found) != 1:
            return gpu
        picked.append(found[0])
    indices = {d["index"] for d in picked}
    narrowed = dict(gpu)
    narrowed["devices"] = picked
    narrowed["processes"] = [p for p in gpu.get("processes", []) if p["gpu"] in indices]
    return narrowed


def gpu_left(before: Answer, now: Answer) -> List[str]:
    """What holds GPU memory that was free before the launch: compute processes that were
    not there, GPUs using more than they did (GPU_SLACK_MIB spared). Empty: it is back."""
    if now.get("error"):
        return ["cannot tell: %s" % now["error"]]
    known = {p["pid"] for p in before.get("processes", []) if p["pid"] is not None}
    left = [_holder(p) for p in now.get("processes", []) if p["pid"] not in known]
    used_before = {d.get("uuid", d["index"]): d["used_mib"] for d in before.get("devices", [])}
    for device in now.get("devices", []):
        was = used_before.get(device["uuid"], used_before.get(device["index"]))
        used = device["used_mib"]
        if used is not None and was is not None and used > was + GPU_SLACK_MIB:
            left.append("GPU %s has %d MiB in use, %d before the launch"
                        % (device["index"], used, was))  # fmt: skip
    return left


def live_runs(root: str, skip: Optional[str]) -> List[Answer]:
    """Servers launched by a runner that still have a process on this host (/proc read
    once, however many run directories the host has kept)."""
    root = os.path.abspath(os.path.expanduser(root))
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return []
    live_sessions = {fields[4] for fields in _processes() if len(fields) > 5 and fields[1] != "Z"}
    now_boot = boot_id()
    alive = []
    for entry in entries:
        if entry == skip:
            continue
        record = _read_json(os.path.join(root, entry, "server.json"))
        if record is None or str(record.get("sid")) not in live_sessions:
            continue
        if record.get("boot_id") and now_boot and record["boot_id"] != now_boot:
            continue  # launched before a reboot: that session id is someone else's now
        alive.append(
            {
                "run_dir": os.path.join(root, entry),
                "run_id": record.get("run_id"),
                "pid": record.get("pid"),
                "command": record.get("command"),
            }
        )
    return alive


def preflight(args: Answer) -> Answer:
    problems = []
    port = int(args["port"]) if args.get("port") else 0
    held = listeners(port) if port else []
    if held:
        who = ", ".join(
            "pid %d (%s)" % (p["pid"], p["cmdline"][:80]) for h in held for p in h["pids"]
        )
        problems.append("port %d is already in use%s" % (port, " by " + who if who else ""))
    gpu = gpus()
    if gpu.get("error"):
        # Neither free nor busy as far as anyone can tell, and a stop could not prove its
        # memory back: a driver nvidia-smi cannot reach would fail the server anyway.
        problems.append("GPUs not checked: %s" % gpu["error"])
    elif gpu.get("present"):
        busy = gpus_busy(only_visible(gpu, args.get("gpus")))
        if busy:
            problems.append("GPUs busy: " + "; ".join(busy))
    runs = live_runs(args.get("runs_root") or RUNS_ROOT, args.get("skip_run"))
    for run in runs:
        problems.append(
            "another launched run is still alive on this host: %s (pid %s)"
            % (run["run_id"] or run["run_dir"], run["pid"])
        )
    return {
        "ok": not problems,
        "problems": problems,
        "gpu": gpu,
        "boot_id": boot_id(),
        "runs": runs,
    }


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


# --- stop, and prove it ------------------------------------------------------------------


def _signal_session(sid: int, sig: int) -> None:
    try:
        os.killpg(sid, sig)
    except OSError:
        pass
    # Members that moved to a process group of their own are still in the session.
    for member in session_members(sid):
        try:
            os.kill(member["pid"], sig)
        except OSError:
            pass


def _wait(condition: Any, seconds: float) -> bool:
    """Look again and again until `condition()` or `seconds`: 5 ms apart at first (most
    things here take a few ms: a process dying, a port released), then 50 ms."""
    deadline = time.time() + seconds
    pause = 0.005
    while True:
        if condition():
            return True
        if time.time() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def stop(args: Answer) -> Answer:
    """SIGTERM to the job's session, SIGKILL after the grace period; then check that no
    process is left, the port is released, GPU memory is back and shared memory freed."""
    run_dir = run_dir_of(args)
    name = args.get("name", "server")
    job = _job(run_dir, name)
    if not job["started"]:
        return {"stopped": True, "signal": None, "left": [], "note": "never started"}
    sid = int(job["sid"])
    grace = float(args.get("grace_s", 30))
    used = None
    if not job["rebooted"] and session_members(sid):
        used = "SIGTERM"
        _signal_session(sid, signal.SIGTERM)
        if not _wait(lambda: not session_members(sid), grace):
            used = "SIGKILL"
            _signal_session(sid, signal.SIGKILL)
            _wait(lambda: not session_members(sid), KILL_WAIT_S)
    left = [] if job["rebooted"] else session_members(sid)
    if not left and not job["rebooted"]:
        # Dead but not yet reaped by their parent (init, for orphans): gone in a moment.
        _wait(lambda: not session_members(sid, zombies=True), KILL_WAIT_S)
    report: Answer = {"stopped": not left, "signal": used, "left": left}
    port = args.get("port")
    if port:
        report["port_free"] = _wait(lambda: not listeners(int(port)), PORT_WAIT_S)
    report.update(
        _gpu_proof(
            args.get("gpu_before") or {},
            float(args.get("gpu_wait_s", GPU_WAIT_S)),
            args.get("gpus"),
        )
    )
    report["shm_removed"], report["shm_left"] = _free_shm(job)
    _wait(lambda: _read_json(os.path.join(run_dir, name + ".exit")) is not None, 2.0)
    report["exit"] = _read_json(os.path.join(run_dir, name + ".exit"))
    return report


def _gpu_proof(before: Answer, wait_s: float, visible: Optional[str]) -> Answer:
    """Whether GPU memory is back to what it was before the launch (`before`, preflight's
    look) on the GPUs the server could use (`visible`: its CUDA_VISIBLE_DEVICES), looking
    again until `wait_s`: the driver frees a process's memory as it ends (within 0.2 s of a
    SIGKILL, on an H200), so what stays longer is held by something else."""
    gpu = gpus()
    if not gpu.get("present") or not before.get("devices"):
        return {"gpu": gpu}

    def left(now: Answer) -> List[str]:
        return gpu_left(only_visible(before, visible), only_visible(now, visible))

    holders = left(gpu)

    def back() -> bool:
        nonlocal gpu, holders
        gpu = gpus()
        holders = left(gpu)
        return not holders

    proven = not holders or _wait(back, wait_s)
    return {"gpu": gpu, "gpu_memory_back": proven, "gpu_left": holders}


def _shm_names() -> List[str]:
    try:
        return sorted(os.listdir("/dev/shm"))
    except OSError:
        return []


def _shm_in_use() -> set:
    used = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            for fd in os.listdir("/proc/%s/fd" % entry):
                target = os.readlink("/proc/%s/fd/%s" % (entry, fd))
                if target.startswith("/dev/shm/"):
                    used.add(target[len("/dev/shm/") :].split(" ")[0])
            with open("/proc/%s/maps" % entry) as f:
                for line in f:
                    if "/dev/shm/" in line:
                        used.add(line.split("/dev/shm/", 1)[1].split(" ")[0].strip())
        except OSError:
            continue
    return used


def _free_shm(job: Answer) -> Any:
    """Shared memory a killed server left in /dev/shm (created after its launch, by this
    user, held by no process): removed. Others are reported, never touched."""
    before = set(job.get("shm_before") or [])
    new = [n for n in _shm_names() if n not in before]
    if not new:
        return [], []
    held = _shm_in_use()
    removed, left = [], []
    for entry in new:
        path = os.path.join("/dev/shm", entry)
        try:
            st = os.lstat(path)
            ours = st.st_uid == os.getuid() and st.st_mtime >= float(job.get("started_at", 0)) - 1
            if ours and entry not in held and os.path.isfile(path):
                os.unlink(path)
                removed.append(entry)
            else:
                left.append(entry)
        except OSError:
            continue
    return removed, left


COMMANDS = {
    "start": start,
    "status": status,
    "wait": wait,
    "preflight": preflight,
    "health": health,
    "stop": stop,
}


# Wrappers this program forked: reaped as they end, so a long `serve` leaves no zombie.
_STARTED = []  # type: List[int]


def _reap_wrappers() -> None:
    for pid in list(_STARTED):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _STARTED.remove(pid)


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
