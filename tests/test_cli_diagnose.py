"""`campaign-dash diagnose` as an engineer runs it on a log file or a pipe."""

import json
import subprocess
import sys
from pathlib import Path

SEED = Path(__file__).parent / "data" / "seed_torch_symm_mem.log"


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "app", "diagnose", *args],
        input=stdin, capture_output=True, timeout=60, check=False,
    )  # fmt: skip


def test_human_output_names_the_root_cause_class_and_excerpt() -> None:
    result = run(str(SEED))
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert "State: crashed" in text
    assert "Root cause (line 59):\n  KeyError: 12" in text
    assert "Class: unsupported_arch" in text
    assert "  | " in text and "torch_symm_mem.py" in text
    assert "\x1b[" not in text  # no colours when not writing to a terminal


def test_json_output_is_one_object_with_the_contract_fields() -> None:
    result = run(str(SEED), "--json")
    assert result.returncode == 0
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


def test_standard_input_and_throughput_figures() -> None:
    log = b"Output token throughput (tok/s):         5624.71\nRequest throughput (req/s):  3.75\n"
    result = run("-", "--json", stdin=log)
    body = json.loads(result.stdout)
    assert [(t["label"], t["value"], t["unit"]) for t in body["throughput"]] == [
        ("Output token throughput", 5624.71, "tok/s"),
        ("Request throughput", 3.75, "req/s"),
    ]
    assert body["crashed"] is False
    human = run("-", stdin=log).stdout.decode()
    assert "Output token throughput: last 5624.71 tok/s" in human


def test_clear_errors_for_missing_files_and_bad_patterns(tmp_path: Path) -> None:
    missing = run(str(tmp_path / "nope.log"))
    assert missing.returncode != 0
    assert b"cannot read" in missing.stderr and b"No such file" in missing.stderr
    directory = run(str(tmp_path))
    assert directory.returncode != 0 and b"Traceback" not in directory.stderr
    pattern = run(str(SEED), "--ready-pattern", "(unclosed")
    assert pattern.returncode == 2 and b"--ready-pattern" in pattern.stderr
