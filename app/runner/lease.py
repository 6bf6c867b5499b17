"""Which dashboard drives a run, when several share one database: the run's row holds a
lease (the holder's instance id and an expiry), claimed when free or expired, renewed while
its driver runs, released at a clean stop. Only the holder drives, stops or benchmarks."""

import os
import secrets
import socket
from datetime import datetime, timedelta

from app.runner.host_proc import boot_id, start_time

# A holder killed without a word (kill -9, a lost machine) is taken over this long after its
# last renewal; renewals come every few seconds (the run manager's rescan).
LEASE_S = 30.0


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return "?"


def instance_id() -> str:
    """`host:pid`, then what tells this process from an earlier one with the same pid (the
    boot, the PID namespace, its start time) and from another app in the same process."""
    pid = os.getpid()
    return "/".join(
        [f"{socket.gethostname()}:{pid}", str(boot_id()), _pid_namespace(),
         str(start_time(pid)), secrets.token_hex(4)]
    )  # fmt: skip


def shown(holder: str) -> str:
    """The part of an instance id a person reads: `host:pid`."""
    return holder.split("/", 1)[0]


def holder_gone(holder: str) -> bool:
    """The holder was a process of this machine's PID namespace, and it has ended: its lease
    is free now (a dashboard killed and started again need not wait for the expiry).
    Another machine's holder is never judged from here."""
    try:
        who, boot, namespace, started, _nonce = holder.split("/")
        host, _, pid = who.rpartition(":")
        pid_number = int(pid)
    except ValueError:
        return False
    here = (socket.gethostname(), str(boot_id()), _pid_namespace())
    if (host, boot, namespace) != here or boot == "None" or started == "None":
        return False  # not this machine, or one that cannot tell its processes apart
    # No such process now, or one that took its pid after it ended.
    return str(start_time(pid_number)) != started


def expiry(now: datetime) -> datetime:
    return now + timedelta(seconds=LEASE_S)
