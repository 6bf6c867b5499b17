"""A launcher's word that another process failed (sglang's "Received sigquit from a child
process") is never the root cause while the log holds the error it points to, and until that
error arrives the diagnosis says it is waiting for it. Shown on the seeds' crash (torch
symmetric memory's KeyError: 12 on Blackwell) in the shapes a real sglang log takes, through
`campaign-dash diagnose` and fed chunk by chunk as the tailer does."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.diagnosis import Diagnoser, diagnose_bytes

SRT = "/root/sglang/python/sglang/srt"
SYMM_MEM = f"{SRT}/distributed/device_communicators/torch_symm_mem.py"
LOGGING = "/usr/lib/python3.12/logging/__init__.py"
SIGQUIT_MESSAGE = "Received sigquit from a child process. It usually means the child failed."
SIGQUIT = f"[2026-02-27 13:21:41] {SIGQUIT_MESSAGE}"
WAITING = "waiting for the failing process's error"
INSTALLED = Path(sys.executable).with_name("campaign-dash")
COMMAND = str(INSTALLED) if INSTALLED.exists() else shutil.which("campaign-dash")


def stamp(second: int, rank: int | None = None) -> str:
    return f"[2026-02-27 13:21:{second:02d}{'' if rank is None else f' TP{rank}'}]"


STARTUP = [
    f"{stamp(25)} WARNING model_config.py:955: DeepGemm is enabled but the scale_fmt of "
    "checkpoint is not ue8m0. This might cause accuracy degradation on Blackwell.",
    f"{stamp(27)} server_args=ServerArgs(model_path='/shared/kimi-k2.5-int4', tp_size=2, "
    "disable_custom_all_reduce=True, enable_torch_symm_mem=True, enable_symm_mem=False)",
    f"{stamp(28)} Using default HuggingFace chat template with detected content format: string",
    f"{stamp(33, 0)} Init torch distributed begin.",
    f"{stamp(33, 1)} Init torch distributed begin.",
]
# The frames under torch symmetric memory's lookup of this GPU's capability (12: Blackwell).
SYMM_MEM_FRAMES = [
    f'  File "{SYMM_MEM}", line 56, in __init__',
    "    self.max_size = TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES[self.device_capability]"
    "[self.world_size]",
    "                    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~^^^^^^^^^^^^^^^^^^^^^^^^",
]


def scheduler_traceback(rank: int) -> list[str]:
    """A scheduler's own record: the rank's prefix on its first line only."""
    return [
        f"{stamp(41, rank)} Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{SRT}/managers/scheduler.py", line 2989, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, "
        "pp_rank, dp_rank)",
        f'  File "{SRT}/distributed/parallel_state.py", line 1436, in initialize_model_parallel',
        "    _TP = init_model_parallel_group(",
        *SYMM_MEM_FRAMES,
        "KeyError: 12",
        "",
    ]


def logging_error(*exception: str) -> list[str]:
    """Python logging's own report (Lib/logging/__init__.py, Handler.handleError) on the
    launcher's sigquit record, in the separate writes other processes' lines can fall between."""
    return [
        "--- Logging error ---",
        "Traceback (most recent call last):",
        f'  File "{LOGGING}", line 1160, in emit',
        "    msg = self.format(record)",
        f'  File "{LOGGING}", line 392, in getMessage',
        "    msg = msg % self.args",
        *exception,
        "Call stack:",
        '  File "/root/sglang/python/sglang/launch_server.py", line 11, in <module>',
        "    launch_server(server_args)",
        f'  File "{SRT}/entrypoints/engine.py", line 735, in launch_phase_sigquit_handler',
        f'    logger.error("{SIGQUIT_MESSAGE}", e)',
        f"Message: '{SIGQUIT_MESSAGE}'",
        "Arguments: (<Signals.SIGQUIT: 3>,)",
    ]


# Logging's own failure: the sigquit handler passes an argument its message has no place for.
LOGGINGS_OWN = logging_error(
    "          ~~~~^~~~~~~~~~~",
    "TypeError: not all arguments converted during string formatting",
)
# The logged code's failure: formatting the record ran into the symmetric-memory table.
LOGGED_CODES = logging_error(*SYMM_MEM_FRAMES, "KeyError: 12")
OTHER_RANK = f"{stamp(41, 1)} Load weight begin. avail mem=93.41 GB"

SHAPES = {
    # The seed's order: the wrapper first, logging's own error, then the schedulers'.
    "sigquit before the scheduler's traceback": [
        *STARTUP, SIGQUIT, *LOGGINGS_OWN, *scheduler_traceback(0), *scheduler_traceback(1),
        f"{stamp(45)} Killed",
    ],
    "sigquit after the scheduler's traceback": [
        *STARTUP, *scheduler_traceback(0), SIGQUIT, *LOGGINGS_OWN, "Killed",
    ],
    "KeyError inside the logging error block, sigquit last": [
        *STARTUP, *LOGGED_CODES, SIGQUIT,
    ],
    "KeyError inside the logging error block, sigquit first": [
        *STARTUP, SIGQUIT, *LOGGED_CODES, "Killed",
    ],
    "KeyError inside and outside the logging error block": [
        *STARTUP, SIGQUIT, *LOGGED_CODES, *scheduler_traceback(1), "Killed",
    ],
    "other ranks' lines between the block's writes and the schedulers' records": [
        *STARTUP, SIGQUIT, *LOGGINGS_OWN[:2], OTHER_RANK, *LOGGINGS_OWN[2:7], OTHER_RANK,
        *LOGGINGS_OWN[7:], f"{stamp(41, 1)} Init torch distributed ends. mem usage=1.02 GB",
        *scheduler_traceback(0), OTHER_RANK, *scheduler_traceback(1), "Killed",
    ],
    # A partial log that starts inside the block: its traceback runs through logging's emit
    # all the same, into the code that raised.
    "the block's header cut off": [*LOGGED_CODES[1:], SIGQUIT, "Killed"],
    "other ranks' lines inside the block that quotes the KeyError": [
        *STARTUP, *LOGGED_CODES[:4], OTHER_RANK, *LOGGED_CODES[4:10], OTHER_RANK,
        *LOGGED_CODES[10:], SIGQUIT, "Killed",
    ],
}  # fmt: skip


def log_of(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def diagnose_command(log: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert COMMAND, "campaign-dash is not installed: pip install -e '.[test]'"
    return subprocess.run(
        [COMMAND, "diagnose", str(log), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("lines", list(SHAPES.values()), ids=list(SHAPES))
def test_the_seed_s_crash_reads_keyerror_12_in_every_shape(
    lines: list[str], tmp_path: Path
) -> None:
    path = tmp_path / "torch_symm_mem_test.log"
    path.write_bytes(log_of(lines))
    result = diagnose_command(path, "--json")
    assert result.returncode == 1, result.stderr  # crashed
    body = json.loads(result.stdout)
    assert body["root_cause"] == "KeyError: 12", body["candidates"]
    assert body["error_class"] == "unsupported_arch"
    assert body["frame"]["file"] == SYMM_MEM and body["frame"]["line"] == 56
    assert body["pending"] is None
    assert body["candidates"][0]["line"] == "KeyError: 12"
    assert all("sigquit" not in c["line"] for c in body["candidates"])


def test_the_human_output_names_the_keyerror_not_the_wrapper(tmp_path: Path) -> None:
    path = tmp_path / "torch_symm_mem_test.log"
    path.write_bytes(log_of(SHAPES["KeyError inside the logging error block, sigquit last"]))
    text = diagnose_command(path).stdout
    assert "Root cause (line" in text and "):\n  KeyError: 12\n" in text
    assert "Class: unsupported_arch" in text
    assert f"Frame: {SYMM_MEM}:56 in __init__" in text
    assert "sigquit" not in text.split("Excerpt")[0]


@pytest.mark.parametrize("lines", list(SHAPES.values()), ids=list(SHAPES))
def test_fed_chunk_by_chunk_it_waits_for_the_child_then_names_it(lines: list[str]) -> None:
    """As the tailer reads it: before the KeyError arrives, a line that only says another
    process failed is no root cause; the diagnosis says what it waits for."""
    log = log_of(lines)
    diagnoser = Diagnoser()
    offset, seen_wrapper = 0, False
    for line in log.splitlines(keepends=True):
        diagnoser.feed(line)
        offset += len(line)
        seen_wrapper = seen_wrapper or SIGQUIT_MESSAGE.encode() in line
        body = diagnoser.diagnosis().to_dict()
        if b"KeyError: 12" not in log[:offset]:
            assert body["root_cause"] is None and body["fingerprint"] is None
            assert body["candidates"] == []
            assert body["pending"] == (WAITING if seen_wrapper else None)
            if seen_wrapper:
                assert body["crashed"] is True
                assert body["crashed_reason"].endswith("says another process failed")
    # ...and ends where reading the whole log at once does.
    assert diagnoser.diagnosis() == diagnose_bytes(log)
    assert diagnoser.diagnosis().root_cause == "KeyError: 12"


def test_the_human_output_says_what_it_waits_for(tmp_path: Path) -> None:
    path = tmp_path / "torch_symm_mem_test.log"
    path.write_bytes(log_of([*STARTUP, SIGQUIT, *LOGGINGS_OWN]))
    result = diagnose_command(path)
    assert result.returncode == 1  # the launcher says its child failed: a crash
    assert f"Root cause: {WAITING}" in result.stdout
    assert "Class:" not in result.stdout and "Fingerprint:" not in result.stdout


def test_a_launcher_naming_the_process_that_died_points_to_that_process_s_own_error() -> None:
    error = (
        "(ApiServer_0 pid=10466) TimeoutError: Timed out waiting for engines to send initial "
        "message on input socket."
    )
    loading = "".join(
        f"Loading safetensors checkpoint shards:  {n}% Completed | {n}/99 [06:21<21:23]\n"
        for n in range(56, 99)
    )
    log = (
        "(ApiServer_0 pid=10466) Traceback (most recent call last):\n"
        '(ApiServer_0 pid=10466)   File "/v/vllm/v1/engine/core_client.py", line 541, in __init__\n'
        "(ApiServer_0 pid=10466)     raise TimeoutError(\n"
        + error
        + "\n"
        + loading
        + "(EngineCore_DP0 pid=10314) INFO 02-27 15:02:31 [core.py:278] init engine (profile, "
        "create kv cache, warmup model) took 63.98 seconds\n"
        "ERROR 02-27 15:02:41 [utils.py:289] Exception occurred while running API servers: "
        "Process ApiServer_0 (PID: 10466) died with exit code 1\n"
        "RuntimeError: Process ApiServer_0 (PID: 10466) died with exit code 1\n"
    )
    found = diagnose_bytes(log.encode())
    assert (found.crashed, found.root_cause) == (True, error)
