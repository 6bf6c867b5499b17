"""The compiled Hyperscan database is kept between runs (a compile takes longer than most
diagnoses): a cache that is missing, foreign, corrupt or unwritable only costs a compile."""

import os
from pathlib import Path

import pytest

from app.diagnosis import diagnose_bytes, hsdb, rules, scanner

CRASH = b'Traceback (most recent call last):\n  File "x.py", line 1\nKeyError: 12\n'


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "campaign-dash"


def compile_uncached(ready_pattern: str | None = None) -> object:
    return scanner.compile_database.__wrapped__(ready_pattern)


def finds_the_crash(database: object) -> bool:
    hits: list[int] = []
    database.scan(  # type: ignore[attr-defined]
        CRASH, match_event_handler=lambda ident, *_: hits.append(ident),
        scratch=scanner.hyperscan.Scratch(database),
    )  # fmt: skip
    return bool(hits)


def test_a_compiled_database_is_stored_and_loaded_by_the_next_run(cache_home: Path) -> None:
    first = compile_uncached()
    stored = list(cache_home.glob("scan-*.hsdb"))
    assert len(stored) == 1 and stored[0].stat().st_size > 0
    written = stored[0].stat().st_mtime_ns
    second = compile_uncached()
    assert second is not first and finds_the_crash(second)
    assert stored[0].stat().st_mtime_ns == written  # read, not compiled and written again
    # No temporary file is left beside it.
    assert [p.name for p in cache_home.iterdir()] == [stored[0].name]


def test_a_readiness_pattern_has_a_database_of_its_own(cache_home: Path) -> None:
    compile_uncached()
    compile_uncached("listening on port")
    assert len(list(cache_home.glob("scan-*.hsdb"))) == 2


def test_a_corrupt_cache_is_compiled_over(cache_home: Path) -> None:
    compile_uncached()
    (stored,) = cache_home.glob("scan-*.hsdb")
    stored.write_bytes(b"not a database")
    database = compile_uncached()
    assert finds_the_crash(database)
    assert stored.read_bytes() != b"not a database"


def test_an_unwritable_cache_path_only_costs_a_compile(cache_home: Path) -> None:
    cache_home.parent.mkdir(parents=True, exist_ok=True)
    cache_home.write_text("a file where the folder would be")
    assert finds_the_crash(compile_uncached())
    assert diagnose_bytes(CRASH).root_cause == "KeyError: 12"


def test_only_the_latest_databases_are_kept(cache_home: Path) -> None:
    cache_home.mkdir(parents=True)
    for n in range(hsdb.KEPT_DATABASES + 3):
        old = cache_home / f"scan-{n:032x}.hsdb"
        old.write_bytes(b"an older release's database")
        os.utime(old, (1_000_000 + n, 1_000_000 + n))
    compile_uncached()
    kept = sorted(cache_home.glob("scan-*.hsdb"))
    assert len(kept) == hsdb.KEPT_DATABASES
    # The new one and the most recent old ones stay; the oldest went.
    assert not (cache_home / f"scan-{0:032x}.hsdb").exists()
    assert (cache_home / f"scan-{hsdb.KEPT_DATABASES + 2:032x}.hsdb").exists()
    assert finds_the_crash(compile_uncached())


def test_no_home_to_keep_a_cache_in_only_costs_a_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert finds_the_crash(compile_uncached())


def test_what_the_patterns_name_is_worked_out_once_and_kept(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    patterns = rules._PREFILTER.patterns
    first = rules._StandIns.of(patterns)
    (stored,) = cache_home.glob("stand-ins-*.json")
    written = stored.stat().st_mtime_ns

    def read_again(patterns: list[str]) -> None:
        raise AssertionError("the patterns were read again")

    monkeypatch.setattr(rules._StandIns, "_read", staticmethod(read_again))
    kept = rules._StandIns.of(patterns)
    assert first is not None and kept is not None
    assert stored.stat().st_mtime_ns == written
    line = "[2026-03-01 10:00:00 TP0] Décodé: KeyError: 12 ░▒▓"
    assert kept.line(line) == first.line(line) and first.line("KeyError: 12") is not None


def test_a_corrupt_record_of_the_patterns_is_worked_out_again(cache_home: Path) -> None:
    patterns = rules._PREFILTER.patterns
    expected = rules._StandIns.of(patterns)
    (stored,) = cache_home.glob("stand-ins-*.json")
    stored.write_text("{not json")
    again = rules._StandIns.of(patterns)
    assert expected is not None and again is not None
    assert again.line("RuntimeError: CUDA error: out of memory") == expected.line(
        "RuntimeError: CUDA error: out of memory"
    )
    assert stored.read_text() != "{not json"


def test_a_release_that_reads_the_patterns_otherwise_does_not_load_the_old_record(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    patterns = rules._PREFILTER.patterns
    rules._StandIns.of(patterns)
    changed = tmp_path / "rules.py"
    changed.write_bytes(Path(rules.__file__).read_bytes() + b"\n# read otherwise\n")
    monkeypatch.setattr(rules, "__file__", str(changed))
    assert rules._StandIns.of(patterns) is not None
    assert len(list(cache_home.glob("stand-ins-*.json"))) == 2
