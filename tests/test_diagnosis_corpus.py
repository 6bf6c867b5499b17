"""Scores the engine on the labelled real logs of tests/corpus (public bug reports).

The cases are split by source thread into a tuning part and a validation part (labels.json's
`split`): rules are tuned on the first; the second, frozen since issue 23, is read as counts
only. A third part, `fresh`, is mined from sources never used before once a round's rules are
written, scored once as the round's estimate of how the engine does on logs nobody has seen,
then folded into tuning for the next round. Each part is held to the floor it reached
(FLOORS), short of the goal (GOAL). A held-out set of the same kind judges the engine too:
nothing here may special-case a file.
"""

import fcntl
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from app.diagnosis import diagnose_bytes
from app.diagnosis.lines import decode, strip_prefixes
from tests.helpers import CORPUS_CASES, LARGEST_PLAIN_LOG, corpus_case_ids, corpus_log
from tests.silence import last_burst_errors, silent

CORPUS = Path(__file__).parent / "corpus"
SPLITS = ("tuning", "validation", "fresh")
# Looked at case by case; the others only as counts.
READ_BY_CASE = ("tuning",)
THRESHOLD = 0.95


def same_root_cause(label: str | None, found: str | None, match: str) -> bool:
    """Compare from the exception on: timestamps and rank prefixes do not count."""
    if label is None or found is None:
        return label == found
    # The engine reports a line as a terminal shows it (colours, even pasted as "^[[31m", gone).
    want, got = strip_prefixes(decode(label.encode())), strip_prefixes(found)
    if match == "substring":  # the log lost its newlines
        return want in got or got in want
    return want == got


def load_cases() -> list[dict]:
    return json.loads((CORPUS / "labels.json").read_text())


Outcome = dict[str, bool]  # each check's verdict on one case


def outcomes(
    cases: list[dict], transform: Callable[[bytes], bytes] = lambda log: log
) -> dict[str, Outcome]:
    """Each case's checks, by case id: the engine reads each log once."""
    found_by_case = {}
    for case in cases:
        log = transform(corpus_log(case["id"]))
        found = diagnose_bytes(log)
        match = case.get("root_cause_match") or "full_line"
        found_by_case[str(case["id"])] = {
            "root_cause": same_root_cause(case["root_cause"], found.root_cause, match),
            # The runners-up: the right line is among the three shown.
            "top3": same_root_cause(case["root_cause"], found.root_cause, match)
            or any(
                same_root_cause(case["root_cause"], candidate.line, match)
                for candidate in found.candidates
            ),
            "error_class": case["error_class"] == found.error_class,
            "crashed": case["crashed"] == found.crashed,
            "ready": case["ready"] == found.ready,
            "throughput": sorted((t["label"], t["value"], t["unit"]) for t in case["throughput"])
            == sorted((t.label, t.value, t.unit) for t in found.throughput),
            # The method's first rule: a log whose last burst holds an error-shaped line is
            # never "nothing found".
            "never_silent": not silent(found) or not last_burst_errors(log),
        }
    return found_by_case


def tally(cases: list[dict], found: dict[str, Outcome]) -> tuple[dict[str, int], list[str]]:
    scores = dict.fromkeys(
        ("root_cause", "top3", "error_class", "crashed", "ready", "throughput", "never_silent"), 0
    )
    misses = []
    for case in cases:
        for name, ok in found[str(case["id"])].items():
            scores[name] += ok
            if not ok:
                misses.append(f"{case['id']} {name}")
    return scores, misses


# The corpus is read plainly in interleaved shards (its heavy logs spread among them), so that
# no one worker spends minutes alone on it under load.
PLAIN_SHARDS = 16


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """The corpus read plainly, once a session: under xdist each worker that asks reads the
    shards no other worker is reading, then waits for the ones they are (their base temps
    share a parent, this session's own) instead of each spending the same CPU on them."""
    cases = load_cases()
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return outcomes(cases)
    shared = tmp_path_factory.getbasetemp().parent / "corpus-plain"
    shared.mkdir(exist_ok=True)
    found: dict[str, Outcome] = {}
    left = list(range(PLAIN_SHARDS))
    for wait in (False, True):
        for shard in list(left):
            with open(shared / f"{shard}.lock", "w") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
                except BlockingIOError:
                    continue  # another worker is reading it: come back for it
                answer = shared / f"{shard}.json"
                if not answer.exists():
                    written = answer.with_suffix(".part")
                    written.write_text(json.dumps(outcomes(cases[shard::PLAIN_SHARDS])))
                    written.replace(answer)
                found.update(json.loads(answer.read_text()))
                left.remove(shard)
    return found


def _report(scores: dict[str, int], total: int) -> str:
    return ", ".join(f"{name} {n}/{total} ({n / total:.0%})" for name, n in scores.items())


def test_every_case_has_a_source_and_a_split_by_thread() -> None:
    cases = load_cases()
    split_of_source: dict[str, str] = {}
    logged = set(corpus_case_ids())
    for case in cases:
        # A public thread, or a run of ours on a GPU whose script is kept beside the cases.
        source = case["source"]
        # (a personal blog may serve its pages over plain http)
        assert source.startswith(("https://", "http://")) or (
            source.startswith("gpu-run:")
            and (CORPUS.parent.parent / source.removeprefix("gpu-run:").split("#")[0]).is_file()
        ), case["id"]
        assert case["split"] in SPLITS, case["id"]
        assert split_of_source.setdefault(case["source"], case["split"]) == case["split"], case
        assert case["id"] in logged, case["id"]
        if not _mined_fresh(case):
            assert case["split"] == _split_by_hash(case["source"]), case["id"]
    # Tuning and validation split each thread by its hash: about half each. Fresh parts folded
    # into tuning after their round do not count: they never were on the validation side.
    split = [case["split"] for case in cases if not _mined_fresh(case)]
    sizes = [split.count(part) for part in ("tuning", "validation")]
    assert min(sizes) >= 0.4 * sum(sizes), sizes


def test_every_root_cause_is_a_line_of_its_log_that_says_something() -> None:
    # (a traceback's caret line or a separator once slipped into a label as its root cause)
    for case in load_cases():
        root = case["root_cause"]
        if root is None:
            continue
        assert re.search(r"[^\W\d_]{2}", root), case["id"]  # (a word, in any script)
        if case.get("root_cause_match", "full_line") == "full_line":
            text = corpus_log(case["id"]).decode(errors="replace")
            lines = {line.rstrip("\r") for line in text.split("\n")}
            segments = {line.rsplit("\r", 1)[-1] for line in lines}
            assert root.rstrip("\r") in lines | segments, case["id"]


def test_each_log_is_stored_one_way_and_large_ones_compressed() -> None:
    plain = {path.name.removesuffix(".log"): path for path in CORPUS_CASES.glob("*.log")}
    packed = {path.name.removesuffix(".log.gz"): path for path in CORPUS_CASES.glob("*.log.gz")}
    assert not plain.keys() & packed.keys()
    assert all(path.stat().st_size <= LARGEST_PLAIN_LOG for path in plain.values())
    assert all(len(corpus_log(case_id)) > LARGEST_PLAIN_LOG for case_id in packed)


def _mined_fresh(case: dict) -> bool:
    """A fresh round's case (F, G, H... Z, then A, B, C, D, E, O, then AA ids): tuning once its
    round is over, never validation."""
    return case["id"][0] in "FGHIJKLNPQRSTUVWXYZABCDEO"


def _split_by_hash(source: str) -> str:
    return ("tuning", "validation")[hashlib.sha256(source.encode()).digest()[0] % 2]


# The goal (issue 11): 95 % on the validation part for root cause, class and crashed, 99 %
# top-3. Each part is held to the floor it reached when these were set (bench/README.md has
# the figures), so a regression fails; the validation floors are at or above the goal.
GOAL = {"root_cause": THRESHOLD, "top3": 0.99, "error_class": THRESHOLD, "crashed": THRESHOLD}
FLOORS = {
    # Since issue 23's ninth round, F061-F128, G001-G014, H001-H079, I001-I192, J001-J105,
    # K001-K100, L001-L097, N001-N222, P001-P179, Q001-Q091, R001-R254, S001-S181, T001-T140,
    # U001-U133, V001-V134, W001-W100, X001-X101, Y001-Y102, Z001-Z105, A001-A112, B001-B111,
    # C001-C159, D001-D136, E001-E077, O001-O137, AA001-AA127, AB001-AB105, AC001-AC104,
    # AD001-AD108, AE001-AE105, AF001-AF150, AG001-AG220, AH001-AH222, AI001-AI279,
    # E080-E096, AJ001-AJ307, AK001-AK404, AL001-AL409, E100-E122, AM001-AM129,
    # AN001-AN607, AO001-AO057, AP001-AP608, AQ001-AQ409, E123-E142, AR001-AR613,
    # E143-E163, AS001-AS713, E164-E188, AT001-AT508, E189-E208, AU001-AU706, E209-E230,
    # AV001-AV608, E231-E250, AW001-AW410, AX001-AX605, AY001-AY709, AZ001-AZ611,
    # E251-E270, BA001-BA704, BB001-BB606, E271-E282, BC001-BC411, BD001-BD610,
    # BE001-BE805, BF001-BF910, E283-E302, BG001-BG910, BH004-BH406, BI001-BI907,
    # BJ001-BJ405, BK001-BK907, E303-E320, BL001-BL908, BM001-BM407, BN001-BN609,
    # BO001-BO215, BP001-BP705, BQ001-BQ206, BR001-BR510, BS001-BS105, BT001-BT714,
    # BU001-BUB08, BV001-BVB05, BW001-BWB08, BX001-BXB03, BY001-BY708, BZ001-BZ312,
    # CA001-CAC11, E321-E342, E343-E362, CBA01-CBK04, E364-E381 and CCA04-CCC08 (the second to
    # eighty-eighth rounds' fresh parts) are tuning too: each part folded in lowers these floors
    # to what the engine reads on the larger part.
    # Ready is no goal of issue 23.
    "tuning": {
        "root_cause": 0.91,
        "top3": 0.94,
        "error_class": 0.80,
        "crashed": 0.96,
        "ready": 0.77,
    },
    "validation": {
        "root_cause": 1.0,
        "top3": 1.0,
        "error_class": 1.0,
        "crashed": 1.0,
        "ready": 0.83,
    },
}


def _part(cases: list[dict], part: str) -> list[dict]:
    return [case for case in cases if case["split"] == part]


def test_engine_scores_at_least_95_percent_on_the_corpus(plain: dict[str, Outcome]) -> None:
    cases = load_cases()
    results = {}
    for part in SPLITS:
        chosen = _part(cases, part)
        if not chosen:  # a fresh part is mined only after a round's rules are written
            print(f"\n{part}: no cases yet")
            continue
        scores, misses = tally(chosen, plain)
        results[part] = (scores, misses, len(chosen))
        print(f"\n{part} ({len(chosen)} cases): {_report(scores, len(chosen))}")
        if part in READ_BY_CASE:
            print(f"{part} misses: " + (", ".join(misses) or "none"))
    scores, _ = tally(cases, plain)
    print(f"all ({len(cases)} cases): {_report(scores, len(cases))}")
    validation, _, total = results["validation"]
    print(
        "validation against the goal: "
        + ", ".join(
            f"{name} {validation[name] / total:.0%} of {goal:.0%}" for name, goal in GOAL.items()
        )
    )
    for part, (scores, misses, total) in results.items():
        for name, floor in FLOORS.get(part, {}).items():
            assert scores[name] / total >= floor, (part, name, misses)


def test_the_engine_is_never_silent_on_a_log_that_ends_in_an_error(
    plain: dict[str, Outcome],
) -> None:
    silent_on = [case_id for case_id, checks in plain.items() if not checks["never_silent"]]
    assert not silent_on and len(plain) == len(load_cases())


def _each_line(log: bytes, prefix: Callable[[int], bytes]) -> bytes:
    return b"\n".join(prefix(number) + line for number, line in enumerate(log.split(b"\n")))


_ESCAPE = re.compile(rb"(\x1b\[[0-9;?]*[ -/]*[@-~])")


def _coloured(log: bytes) -> bytes:
    """Levels and exception names coloured, as a viewer colours text: between the escapes a
    log already holds (IPython's), never inside one ("\x1b[0;31mValueError")."""
    pieces = _ESCAPE.split(log)
    pieces[::2] = [
        re.sub(
            rb"\b(ERROR|WARNING|INFO|Traceback|\w+Error)\b",
            lambda m: b"\x1b[1;31m" + m[1] + b"\x1b[0m",
            text,
        )
        for text in pieces[::2]
    ]
    return b"".join(pieces)


def _stamp(number: int) -> bytes:
    return b"2026-02-27T13:%02d:%02d.%03d" % (
        number // 60000 % 60,
        number // 1000 % 60,
        number % 1000,
    )


# The same logs as other tools show them: the engine must not depend on how they came.
VIEWS: dict[str, Callable[[bytes], bytes]] = {
    "crlf": lambda log: log.replace(b"\n", b"\r\n"),
    "ansi colours": lambda log: _coloured(log),
    "docker compose": lambda log: _each_line(log, lambda _: b"sglang-1  | "),
    "kubectl --timestamps": lambda log: _each_line(log, lambda n: _stamp(n) + b"123456Z "),
    "journalctl": lambda log: _each_line(
        log, lambda n: b"Feb 27 13:%02d:%02d gpu-box python3[4242]: " % (n // 60 % 60, n % 60)
    ),
    "cloud viewer": lambda log: _each_line(
        log, lambda n: b"ERROR " + _stamp(n).replace(b"T", b" ") + b" UTC "
    ),
    "mpirun --tag-output": lambda log: _each_line(log, lambda _: b"[1,0]<stderr>:"),
    "torchrun --tee": lambda log: _each_line(log, lambda _: b"[default0]:"),
    "ray worker": lambda log: _each_line(log, lambda _: b"(RayWorkerWrapper pid=4242) "),
    "cloud viewer, newest first": lambda log: b"\n".join(
        reversed(_each_line(log, lambda n: b"E " + _stamp(n) + b"Z ").split(b"\n"))
    ),
}


# Each case is read through one of the viewers, in turn: each viewer reads a different tenth
# of the corpus (over 370 cases), and every case is read through one. (Three viewers a case
# cost CI three more readings of the corpus than the plain one, for the same prefixes.)
def _seen_through(view: str, cases: list[dict]) -> list[dict]:
    turn = list(VIEWS).index(view)
    return [case for i, case in enumerate(cases) if i % len(VIEWS) == turn]


def test_every_case_is_seen_through_one_viewer() -> None:
    cases = load_cases()
    seen = Counter(case["id"] for view in VIEWS for case in _seen_through(view, cases))
    assert len(seen) == len(cases) and set(seen.values()) == {1}
    assert min(len(_seen_through(view, cases)) for view in VIEWS) >= len(cases) // len(VIEWS)


@pytest.mark.parametrize("view", VIEWS)
def test_the_corpus_read_through_other_viewers_scores_as_well(
    view: str, plain: dict[str, Outcome]
) -> None:
    """The same logs through another tool score as read plainly, give or take a few
    ambiguous ones (a one-line log stamped ERROR by a viewer)."""
    cases = _seen_through(view, load_cases())
    plain_scores, _ = tally(cases, plain)
    scores, misses = tally(cases, outcomes(cases, VIEWS[view]))
    tolerance = max(1, len(cases) * 3 // 100)
    for name in ("root_cause", "error_class", "crashed"):
        assert scores[name] >= plain_scores[name] - tolerance, misses
