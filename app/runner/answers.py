"""The host program's answers as the dashboard reads them, one TypedDict per answer, keyed
as the wire is: the program (app/runner/hostprog.py, Python 3.6) sends plain dicts, and
stop and preflight answers are stored as they came (the run's stop_report, preflight)."""

from typing import Any, NotRequired, TypedDict


class Member(TypedDict):
    """A process of a job's session."""

    pid: int
    comm: str


class Exit(TypedDict):
    """How a job ended, as its wrapper wrote it (NAME.exit)."""

    exit_code: int  # 128 + the signal for a job a signal ended
    signal: int | None
    ended_at: float


class ResultFileRead(TypedDict):
    """What a benchmark run wrote to its result file: `text` (of an appended file, its own
    part, from `offset`), or the `problem` that kept it from being read."""

    path: str | None
    problem: NotRequired[str]
    offset: NotRequired[int]
    text: NotRequired[str]


class Job(TypedDict):
    """One job of a run directory (the server, a benchmark run): its record once started
    (NAME.json) and what the host sees of it now."""

    name: str
    exists: bool  # asked to start (its spec written), started or not
    started: bool
    alive: bool  # a process of its session is left (its children may outlive it)
    # Its record, once started.
    run_id: NotRequired[str | None]
    command: NotRequired[str]
    log_path: NotRequired[str]
    cwd: NotRequired[str]
    boot_id: NotRequired[str | None]
    shm_before: NotRequired[list[str]]
    pid: NotRequired[int]
    pgid: NotRequired[int]
    sid: NotRequired[int]
    wrapper_pid: NotRequired[int]
    leader_start: NotRequired[str | None]
    started_at: NotRequired[float]
    # What the host sees of it now, once started.
    running: NotRequired[bool]  # its own process still runs
    members: NotRequired[list[Member]]
    rebooted: NotRequired[bool]  # started under another boot id
    exit: NotRequired[Exit | None]
    log_size: NotRequired[int | None]
    lost: NotRequired[bool]  # its wrapper gone without a word: how it ended is lost
    # Asked with `output`, once it ended: the end of its log and its result file.
    output: NotRequired[str]
    result_file: NotRequired[ResultFileRead]
    already: NotRequired[bool]  # `start` of a job started before: not started again


class Health(TypedDict):
    """A GET of the server's health URL from the host itself."""

    ok: bool
    status: int | None
    error: NotRequired[str]


class StatusAnswer(TypedDict):
    """`status` and `wait`: the jobs asked for, by name, and the health asked with them."""

    boot_id: str | None
    run_dir: str
    jobs: dict[str, Job]
    health: NotRequired[Health]


class Device(TypedDict):
    index: str  # nvidia-smi's index, as CUDA_VISIBLE_DEVICES names it
    uuid: str
    used_mib: int | None  # None: nvidia-smi said something else ("[N/A]")
    total_mib: int | None
    mig: bool


class GpuProcess(TypedDict):
    pid: int | None
    name: str
    used_mib: int | None
    gpu: str  # its device's index (its UUID when nvidia-smi did not list that device)


class Gpus(TypedDict):
    """What nvidia-smi said: `present` False without it, `error` when it failed."""

    present: bool
    note: NotRequired[str]
    error: NotRequired[str]
    devices: NotRequired[list[Device]]
    processes: NotRequired[list[GpuProcess]]


class LiveRun(TypedDict):
    """A server another launch left running on the host."""

    run_dir: str
    run_id: str | None
    pid: int | None
    command: str | None


class Preflight(TypedDict):
    """What would poison a measurement before a launch: `problems`, none when `ok`."""

    ok: bool
    problems: list[str]
    gpu: Gpus
    boot_id: str | None
    runs: list[LiveRun]
    # Asked with `probe`: the host's GPUs, driver and the interpreter's packages, raw, and
    # as app/environment.py reads them (added by the dashboard).
    probe: NotRequired[dict[str, Any]]
    environment: NotRequired[dict[str, Any] | None]


class StopReport(TypedDict):
    """A stop and its proof: no process left, the port free, GPU memory back (each asked
    only where it applies), shared memory freed."""

    stopped: bool
    signal: str | None  # SIGTERM, SIGKILL, or None when nothing was left to stop
    left: list[Member]
    note: NotRequired[str]  # "never started"
    port_free: NotRequired[bool]
    gpu: NotRequired[Gpus]
    gpu_memory_back: NotRequired[bool]
    gpu_left: NotRequired[list[str]]
    shm_removed: NotRequired[list[str]]
    shm_left: NotRequired[list[str]]
    exit: NotRequired[Exit | None]
