"""What /proc and a run directory's files say on the GPU host: processes and sessions, the
sockets listening on a port, shared memory, the JSON records of jobs. Part of the runner's
host program (app/runner/hostprog.py): standard library only, Python 3.6 compatible."""

import errno
import json
import os
import socket
import time
from typing import Any, Dict, List, Optional

Answer = Dict[str, Any]


def start_time(pid: int) -> Optional[str]:
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def boot_id() -> Optional[str]:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return None


def _write_json(path: str, body: Answer) -> None:
    with open(path + ".tmp", "w") as f:
        json.dump(body, f)
    os.rename(path + ".tmp", path)


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
