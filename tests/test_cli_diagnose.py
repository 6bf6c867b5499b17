"""`campaign-dash diagnose` as an engineer runs it on a log file or a pipe: the installed
command, in a subprocess."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SEED = Path(__file__).parent / "data" / "seed_torch_symm_mem.log"
HEALTHY = (
    b"[2026-02-27 13:22:00] The server is fired up and ready to roll!\n"
    b"Output token throughput (tok/s):         81.90\n"
)
# The command pip installed beside this interpreter (the virtual environment's), else on PATH.
INSTALLED = Path(sys.executable).with_name("campaign-dash")
COMMAND = str(INSTALLED) if INSTALLED.exists() else shutil.which("campaign-dash")


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    assert COMMAND, "campaign-dash is not installed: pip install -e '.[test]'"
    return subprocess.run(
        [COMMAND, "diagnose", *args], input=stdin, capture_output=True, timeout=60, check=False
    )


def test_human_output_names_the_root_cause_class_and_excerpt() -> None:
    result = run(str(SEED))
    assert result.returncode == 1, result.stderr  # crashed
    text = result.stdout.decode()
    assert "State: crashed" in text
    assert "Root cause (line 59):\n  KeyError: 12" in text
    assert "Class: unsupported_arch" in text
    assert "Frame: /root/sglang/python/sglang/srt/distributed/device_communicators/" in text
    assert "torch_symm_mem.py:56 in __init__" in text
    assert "Also in this log:\n  line 76: [2026-02-27 13:21:45] Killed" in text
    assert "  | " in text and "torch_symm_mem.py" in text
    assert "\x1b[" not in text  # no colours when not writing to a terminal


def test_a_hang_reads_as_stalled_on_its_failure_not_as_nothing_seen() -> None:
    waiting = b"[rank3]:[W CUDAFunctions.cpp:108] Waiting in store based barrier to initialize "
    hang = b"".join(
        waiting + b"process group for rank: 3, key: store_based_barrier_key:1 "
        b"(world_size=8, num_workers_joined=7, timeout=0:30:00)\n"
        for _ in range(3)
    )
    result = run("-", stdin=b"step 1 done\n" + hang)
    assert result.returncode == 0, result.stderr  # no crash
    text = result.stdout.decode()
    assert "State: no crash, stalled on a failure" in text
    assert "Class: timeout_or_hang" in text
    healthy = run("-", stdin=HEALTHY).stdout.decode()
    assert "State: ready" in healthy and "stalled" not in healthy


def test_json_output_is_one_object_with_the_contract_fields() -> None:
    result = run(str(SEED), "--json")
    assert result.returncode == 1  # crashed, and the JSON says so
    body = json.loads(result.stdout)
    for field in ("ready", "crashed", "root_cause", "error_class", "fingerprint", "excerpt"):
        assert field in body
    assert body["root_cause"] == "KeyError: 12" and body["crashed"] is True
    assert body["root_cause_at"] == {
        "text": "KeyError: 12",
        "offset": body["root_cause_at"]["offset"],
        "line": 59,
    }
    assert SEED.read_bytes()[body["root_cause_at"]["offset"] :].startswith(b"KeyError: 12\n")
    assert isinstance(body["throughput"], list)


def test_json_output_carries_the_runners_up_and_the_frame_to_patch() -> None:
    body = json.loads(run(str(SEED), "--json").stdout)
    assert body["candidates"][0] == {
        "line": "KeyError: 12",
        "line_no": 59,
        "offset": body["root_cause_at"]["offset"],
    }
    assert 2 <= len(body["candidates"]) <= 3
    lines = SEED.read_text().splitlines()
    assert all(lines[c["line_no"] - 1] == c["line"] for c in body["candidates"])
    assert body["frame"] == {
        "file": "/root/sglang/python/sglang/srt/distributed/device_communicators/torch_symm_mem.py",
        "line": 56,
        "function": "__init__",
    }
    healthy = json.loads(run("-", "--json", stdin=HEALTHY).stdout)
    assert healthy["candidates"] == [] and healthy["frame"] is None


def test_json_output_says_why_crashed_reads_as_it_does_and_null_when_the_log_cannot_tell() -> None:
    # An engine's ERROR line, then the end of the log: a crash, with the line that decided it.
    stopped = run(
        "-",
        "--json",
        stdin=b"INFO loading\nERROR engine.py:12] CUDA error: an illegal memory access\n",
    )
    assert stopped.returncode == 1
    body = json.loads(stopped.stdout)
    assert body["crashed"] is True and "line 2" in body["crashed_reason"]
    # An ERROR line after which the process goes on logging records of its own: maybe fatal.
    went_on = (
        b"ERROR 01-31 02:38:15 [worker.py:597] failed to reach the metrics endpoint\n"
        + b"".join(
            b"INFO 01-31 02:38:%02d [engine.py:88] step %d done\n" % (16 + n, n) for n in range(8)
        )
    )
    unknown = run("-", "--json", stdin=went_on)
    assert unknown.returncode == 0, unknown.stderr  # not shown crashed
    body = json.loads(unknown.stdout)
    assert body["crashed"] is None
    assert "does not tell" in body["crashed_reason"]
    human = run("-", stdin=went_on).stdout.decode()
    assert "State: crashed or not, the log does not tell" in human
    assert "Why: an error-severity line at line 1" in human


def test_standard_input_and_throughput_figures() -> None:
    log = b"Output token throughput (tok/s):         5624.71\nRequest throughput (req/s):  3.75\n"
    result = run("-", "--json", stdin=log)
    assert result.returncode == 0
    body = json.loads(result.stdout)
    assert [(t["label"], t["value"], t["unit"]) for t in body["throughput"]] == [
        ("Output token throughput", 5624.71, "tok/s"),
        ("Request throughput", 3.75, "req/s"),
    ]
    assert body["crashed"] is False
    human = run("-", stdin=log).stdout.decode()
    assert "Output token throughput: last 5624.71 tok/s" in human
    assert f"(2 lines, {len(log)} bytes)" in human
    assert "(1 line, 1 byte)" in run("-", stdin=b"\n").stdout.decode()


def test_clear_errors_for_missing_files_and_bad_patterns(tmp_path: Path) -> None:
    missing = run(str(tmp_path / "nope.log"))
    assert missing.returncode == 2
    assert b"cannot read" in missing.stderr and b"No such file" in missing.stderr
    directory = run(str(tmp_path))
    assert directory.returncode == 2 and b"Traceback" not in directory.stderr
    pattern = run(str(SEED), "--ready-pattern", "(unclosed")
    assert pattern.returncode == 2 and b"--ready-pattern" in pattern.stderr


@pytest.mark.parametrize(
    ("log", "status"),
    [
        (HEALTHY, 0),
        (b"", 0),  # nothing yet is no crash
        (SEED.read_bytes(), 1),
        (HEALTHY + b"Traceback (most recent call last):\n  File \"x.py\", line 1\n"
         b"torch.OutOfMemoryError: CUDA out of memory.\n", 1),
    ],
    ids=["healthy", "empty", "seed crash", "ready then crashed"],
)  # fmt: skip
def test_exit_status_says_crashed_or_not_from_a_file_and_a_pipe(
    tmp_path: Path, log: bytes, status: int
) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(log)
    for result in (run(str(path)), run(str(path), "--json"), run("-", stdin=log)):
        assert result.returncode == status, result.stderr
        # An empty log (an `ssh host cat` that failed, say) is said to be empty.
        warned = b"is empty: nothing to diagnose" in result.stderr
        assert result.stdout and (warned if not log else not result.stderr), result.stderr


def test_exit_status_2_when_the_log_cannot_be_read_or_the_usage_is_wrong(
    tmp_path: Path,
) -> None:
    unreadable = run("/proc/self/mem")  # exists, and every read fails with EIO
    assert unreadable.returncode == 2
    assert unreadable.stderr.decode().strip() == (
        "Error: cannot read /proc/self/mem: Input/output error"
    )
    closed = subprocess.run(  # standard input closed, as under some job runners
        ["sh", "-c", 'exec "$0" diagnose - <&-', str(COMMAND)],
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert closed.returncode == 2 and b"cannot read standard input" in closed.stderr
    for usage in ([], ["a.log", "b.log"], [str(SEED), "--no-such-option"]):
        result = run(*usage)
        assert result.returncode == 2 and b"Usage:" in result.stderr, usage
        assert b"Traceback" not in result.stderr


def test_exit_status_2_for_binary_data_not_a_log(tmp_path: Path) -> None:
    # A rotated log still compressed, or a core file: "no crash seen" would tell a script
    # `diagnose run.log.1.gz || ...` that the server was fine.
    import gzip
    import os

    compressed = tmp_path / "server.log.1.gz"
    compressed.write_bytes(gzip.compress(SEED.read_bytes()))
    garbage = tmp_path / "core"
    garbage.write_bytes(os.urandom(20000))
    for path in (compressed, garbage):
        for result in (run(str(path)), run(str(path), "--json"), run("-", stdin=path.read_bytes())):
            assert result.returncode == 2, (path, result.stdout)
            assert b"not a text log" in result.stderr and not result.stdout
            assert b"Traceback" not in result.stderr
    # what it is, and how to read it, only where that is known: a command that runs
    said = run(str(compressed)).stderr
    assert f"(unpack it: zcat {compressed} | campaign-dash diagnose -)".encode() in said, said
    said = run("-", stdin=compressed.read_bytes()).stderr
    assert b"(unpack it: zcat FILE | campaign-dash diagnose -)" in said, said
    # Nothing but NULs is no log, and a device is no file: said at once, never read forever.
    nuls = tmp_path / "zeros.log"
    nuls.write_bytes(b"\0" * 3_000_000)
    for result in (run(str(nuls)), run("-", stdin=nuls.read_bytes()), run("/dev/zero")):
        assert result.returncode == 2 and not result.stdout, result.stderr
    assert b"it holds only NUL bytes" in run(str(nuls)).stderr
    assert b"/dev/zero is a device, not a log file" in run("/dev/zero").stderr
    said = run(str(garbage)).stderr
    assert b"it holds binary data" in said and b"zcat" not in said, said
    # Text is diagnosed however it is spoiled: the NULs a copytruncate leaves at the start,
    # a stray NUL or bad UTF-8 in a line.
    spoiled = b"\0" * 10000 + HEALTHY + b"\xff\xfe broken \x00 bytes\n" + SEED.read_bytes()
    assert run("-", stdin=spoiled).returncode == 1


def test_help_states_the_exit_statuses() -> None:
    result = run("--help")
    assert result.returncode == 0
    help_text = " ".join(result.stdout.decode().split())
    assert "0 no crash found" in help_text
    assert "1 the log shows a crash" in help_text
    assert "2 the log could not be read, or bad usage" in help_text


def test_diagnose_starts_without_the_verbs_the_http_client_or_the_web_stack() -> None:
    """Start-up is most of `diagnose` on a small log (bench/diagnose.py): the campaign's verbs,
    their HTTP client and the web stack are imported only by the commands that use them."""
    probe = (
        "import atexit, sys\n"
        "heavy = ('app.verbs', 'app.client', 'httpx', 'fastapi', 'pydantic', 'sqlalchemy')\n"
        "atexit.register(lambda: print(sorted(m for m in heavy if m in sys.modules), "
        "file=sys.stderr))\n"
        "from app.cli import main\n"
        f"main(['diagnose', {str(SEED)!r}], prog_name='campaign-dash')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, timeout=60, check=False
    )
    assert result.returncode == 1, result.stderr  # the seed's log crashed
    assert result.stderr.decode().strip().splitlines()[-1] == "[]"


def test_the_verbs_are_still_listed_and_run() -> None:
    assert COMMAND
    listed = subprocess.run([COMMAND, "--help"], capture_output=True, timeout=60, check=True)
    assert all(verb in listed.stdout.decode() for verb in ("note", "compare", "export", "seen"))
    helped = subprocess.run(
        [COMMAND, "compare", "--help"], capture_output=True, timeout=60, check=True
    )
    assert b"side by side" in helped.stdout


def test_every_verb_is_named_where_the_command_looks_for_it() -> None:
    from app.cli import VERB_NAMES
    from app.verbs import VERBS

    assert sorted(VERB_NAMES) == sorted(verb.name for verb in VERBS)


def test_a_huge_line_in_the_excerpt_is_cut_for_the_terminal_and_whole_in_json(
    tmp_path: Path,
) -> None:
    huge = "server_args=ServerArgs(" + "a" * 2_000_000 + ")"
    log = tmp_path / "huge.log"
    log.write_text(
        f'Traceback (most recent call last):\n  File "launch.py", line 9, in main\n    {huge}\n'
        "KeyError: 12\n"
    )
    shown = run(str(log)).stdout.decode()
    assert "KeyError: 12" in shown and len(shown) < 8000, len(shown)
    assert "more characters)" in shown
    whole = json.loads(run(str(log), "--json").stdout)
    assert any(len(line) > 10_000 for line in whole["excerpt"].splitlines())
