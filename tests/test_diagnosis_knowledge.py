"""Every row of the engine's knowledge (app/diagnosis/knowledge/) read through the engine path
that uses it: its example line must do there what the row says, and say where it comes from."""

import gc
import re
from collections.abc import Sequence

import pytest

from app.diagnosis import Diagnosis, diagnose_bytes
from app.diagnosis.knowledge.benign import BENIGN, Benign
from app.diagnosis.knowledge.fact import Fact
from app.diagnosis.knowledge.figures import FIGURE_KINDS, FigureKind
from app.diagnosis.knowledge.lifecycle import (
    ENGINE_GONE,
    FINISHED,
    LAUNCHES,
    NEVER_STARTED,
    REQUEST_REFUSED,
    SERVING,
    SKIPPED,
    STARTED,
    STOPPED,
    WAITING,
    Launch,
)
from app.diagnosis.knowledge.ready import READY_LINES, ReadyLine
from app.diagnosis.knowledge.wrappers import WRAPPERS, Wrapper
from app.diagnosis.lines import decode
from tests.helpers import corpus_case_ids, corpus_log

OBSERVED = re.compile(r"observed in corpus case (\w+)")

# A failure none of the rows is about: what the row's line must not hide or turn into.
FAILURE = "RuntimeError: weights of layer 3 hold NaN"
TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/srv/engine/loop.py", line 88, in event_loop',
    "    step()",
    FAILURE,
]
SGLANG_LAUNCH = "[2025-03-01 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=1)"
SGLANG_READY = "[2025-03-01 10:02:41] The server is fired up and ready to roll!"
# Lines no anchor of the scanner finds: they keep the lines around them apart, and make a
# logger's ERROR severity on the row's line mean something (not a viewer's stamp on every line).
FILLER = [f"step {n} done" for n in range(100)]
QUIET = FILLER[:10]

Row = Fact | FigureKind


def _pattern(row: Row) -> str:
    """What tells the row apart: its pattern, or a figure kind's literal (the benchmark
    summaries share one pattern)."""
    return row.literal.decode().strip() if isinstance(row, FigureKind) else row.pattern


def _params(kind: str, rows: Sequence[Row]) -> list[pytest.ParameterSet]:
    """One test id a row, naming its kind, its first engine and its pattern."""
    return [pytest.param(row, id=f"{kind} {row.engines[0]}: {_pattern(row)[:48]}") for row in rows]


ALL_ROWS = [
    *_params("ready", READY_LINES),
    *_params("figure", FIGURE_KINDS),
    *_params("wrapper", WRAPPERS),
    *_params("benign", BENIGN),
    *_params("launch", LAUNCHES),
    *_params("serving", SERVING),
    *_params("never-started", NEVER_STARTED),
    *_params("waiting", WAITING),
    *_params("request-refused", REQUEST_REFUSED),
    *_params("stopped", STOPPED),
    *_params("finished", FINISHED),
    *_params("started", STARTED),
    *_params("skipped", SKIPPED),
    *_params("engine-gone", ENGINE_GONE),
]


def diagnose(*lines: str) -> Diagnosis:
    return diagnose_bytes("".join(f"{line}\n" for line in lines).encode())


def _named(row: Row) -> str:
    return f"row {_pattern(row)!r} ({row.source})"


@pytest.mark.parametrize("row", ALL_ROWS)
def test_every_row_has_an_example_that_it_matches_and_a_source(row: Row) -> None:
    assert row.engines and all(engine.strip() for engine in row.engines), _named(row)
    assert row.example.strip() and row.source.strip(), _named(row)
    assert "\n" not in row.example, _named(row)
    if isinstance(row, FigureKind):
        raw = row.example.encode()
        assert row.literal in raw and row.pattern.search(raw), _named(row)
        assert row.anchor is None or re.search(row.anchor, raw), _named(row)
    else:
        assert re.search(row.pattern, row.example), _named(row)


@pytest.mark.parametrize("row", [p for p in ALL_ROWS if OBSERVED.search(p.values[0].source)])
def test_an_example_said_to_be_observed_is_a_line_of_that_case(row: Row) -> None:
    for case in OBSERVED.findall(row.source):
        log = corpus_log(case)
        lines = {decode(raw).rstrip() for raw in log.split(b"\n")}
        assert row.example in lines, f"{_named(row)}: not a line of case {case}"


def test_no_two_rows_of_a_kind_are_the_same() -> None:
    for rows in (READY_LINES, FIGURE_KINDS, WRAPPERS, BENIGN, LAUNCHES, SERVING, NEVER_STARTED):
        keys = [_pattern(row) for row in rows]
        assert len(set(keys)) == len(keys), keys


@pytest.mark.parametrize("row", _params("ready", READY_LINES))
def test_a_ready_line_says_ready(row: ReadyLine) -> None:
    result = diagnose(row.example)
    assert result.ready is True, _named(row)
    assert result.ready_at is not None and result.ready_at.text == row.example, _named(row)
    if row.confirm:
        # Cut before what confirms it, the line the row finds is not ready.
        confirm = re.search(row.confirm, row.example)
        assert confirm is not None, _named(row)
        assert diagnose(row.example[: confirm.start()]).ready is not True, _named(row)


@pytest.mark.parametrize("row", _params("ready", READY_LINES))
def test_in_an_sglang_log_only_the_rows_that_say_so_mean_ready(row: ReadyLine) -> None:
    result = diagnose(SGLANG_LAUNCH, row.example)
    assert (result.ready is True) is row.in_sglang_log, _named(row)


def _figures(kind: FigureKind, raw: bytes) -> list[tuple[str, float, str]]:
    """(label, value, unit) of each figure the kind's pattern reads in a line, its defaults
    where the line names no label or unit."""
    figures = []
    for match in kind.pattern.finditer(raw):
        label, unit = match.groupdict().get("label"), match.groupdict().get("unit")
        figures.append(
            (
                (label or kind.label).decode().strip(),
                float(match["value"]),
                (unit or kind.unit).decode(),
            )
        )
    return sorted(figures)


@pytest.mark.parametrize("row", _params("figure", FIGURE_KINDS))
def test_a_figure_line_gives_the_figures_its_kind_reads(row: FigureKind) -> None:
    expected = _figures(row, row.example.encode())
    found = sorted((f.label, f.value, f.unit) for f in diagnose(row.example).throughput)
    assert expected and found == expected, _named(row)
    assert all(unit for _, _, unit in found), _named(row)


@pytest.mark.parametrize("row", _params("figure", FIGURE_KINDS))
def test_only_an_engine_s_serving_statistic_says_it_lived_through_a_failure(
    row: FigureKind,
) -> None:
    # (far enough after the failure that the line itself is not kept: its figure counts)
    result = diagnose(*TRACEBACK, *FILLER[:60], row.example)
    assert (result.root_cause is None) is row.serving, _named(row)


@pytest.mark.parametrize("row", _params("wrapper", WRAPPERS))
def test_a_wrapper_never_hides_the_failure_it_reports(row: Wrapper) -> None:
    for lines in ([*QUIET, row.example, *TRACEBACK], [*QUIET, *TRACEBACK, row.example]):
        result = diagnose(*lines)
        assert result.root_cause == FAILURE and result.crashed is True, (_named(row), lines)
        if row.strong:
            # It points elsewhere only: never a line worth reading instead.
            assert row.example not in [c.line for c in result.candidates], _named(row)


@pytest.mark.parametrize("row", _params("wrapper", [w for w in WRAPPERS if w.another_process]))
def test_a_word_that_another_process_failed_waits_for_its_error(row: Wrapper) -> None:
    result = diagnose(*QUIET, row.example)
    assert result.crashed is True and result.root_cause is None, _named(row)
    assert result.pending == "waiting for the failing process's error", _named(row)
    assert result.candidates == [] and result.fingerprint is None, _named(row)


@pytest.mark.parametrize("row", _params("benign", BENIGN))
def test_a_benign_line_is_no_failure(row: Benign) -> None:
    for lines in (
        [*QUIET, row.example, *QUIET],
        [SGLANG_READY, *QUIET, row.example, *QUIET],
        # as vLLM's engine core relays a worker's output: at ERROR severity
        [*QUIET, f"ERROR 03-01 10:00:05 [core.py:632] {row.example}", *QUIET],
    ):
        result = diagnose(*lines)
        assert result.root_cause is None and result.crashed is False, (_named(row), lines)
    assert diagnose(*QUIET, row.example, *TRACEBACK).root_cause == FAILURE, _named(row)


@pytest.mark.parametrize("row", _params("launch", LAUNCHES))
def test_a_new_launch_leaves_the_last_run_s_failure_behind(row: Launch) -> None:
    result = diagnose(row.example, *TRACEBACK, row.example)
    assert result.root_cause is None and result.crashed is False, _named(row)
    if row.anchor is not None:
        # The scanner keeps the line by its anchor, however far from any other.
        assert row.anchor in row.example, _named(row)
        result = diagnose(row.example, *FILLER, *TRACEBACK, *FILLER, row.example)
        assert result.root_cause is None, _named(row)


@pytest.mark.parametrize("row", _params("serving", SERVING))
def test_serving_after_a_failure_means_the_server_lived_through_it(row: Fact) -> None:
    assert diagnose(*TRACEBACK, row.example).root_cause == FAILURE, _named(row)
    result = diagnose(*TRACEBACK, row.example, row.example, row.example)
    assert result.root_cause is None and result.crashed is False, _named(row)


@pytest.mark.parametrize("row", _params("started", STARTED))
def test_an_engine_that_finished_starting_lived_through_what_failed_before(row: Fact) -> None:
    found = diagnose(*QUIET, *TRACEBACK, *QUIET, row.example, *QUIET)
    assert found.crashed is False and found.root_cause is None, _named(row)
    # what fails after it is a crash
    found = diagnose(*QUIET, row.example, *QUIET, *TRACEBACK)
    assert found.crashed is True and found.root_cause == FAILURE, _named(row)


@pytest.mark.parametrize("row", _params("skipped", SKIPPED))
def test_a_part_left_out_for_the_exception_above_means_it_was_lived_through(row: Fact) -> None:
    found = diagnose(*QUIET, *TRACEBACK, row.example, *QUIET)
    assert found.crashed is False and found.root_cause is None, _named(row)


@pytest.mark.parametrize("row", _params("never-started", NEVER_STARTED))
def test_a_server_that_says_it_never_started_was_not_ready(row: Fact) -> None:
    # (the failing frame is in an event loop: without the row's word it might have served)
    result = diagnose(*TRACEBACK, row.example)
    assert result.root_cause == FAILURE and result.ready is False, _named(row)
    assert diagnose(*TRACEBACK).ready is None


def test_every_pattern_of_the_engine_compiles() -> None:
    """The engine's patterns are compiled when first tried (app/diagnosis/rules.py): each must
    compile, whether or not a log has reached it yet."""
    from app.diagnosis import analysis, burst, marking, rules

    alternatives = [
        value
        for module in (rules, analysis, burst, marking)
        for value in vars(module).values()
        if isinstance(value, rules.Alternatives)
    ]
    alternatives += [pattern for _, pattern in (*rules.CLASS_RULES, *rules.CONTEXT_RULES)]
    assert len(alternatives) > 20
    for each in alternatives:
        for source in each.sources:
            re.compile(source)


# The lines are tried in shards that xdist's workers share (one test took 85 s alone).
PREFILTER_SHARDS = 4


@pytest.mark.parametrize("shard", range(PREFILTER_SHARDS))
def test_the_prefilter_reads_every_pattern_and_never_misses_a_match(shard: int) -> None:
    """Hyperscan's database of every pattern (rules.py's `_PREFILTER`) only narrows which
    patterns `re` tries: on real lines every set answers as if each pattern were tried."""
    from app.diagnosis import analysis, burst, marking, rules  # noqa: F401 (their sets too)

    database, covered = rules._PREFILTER.database()
    assert database is not None and covered == len(rules._PREFILTER.patterns)
    sets = [value for value in gc.get_objects() if isinstance(value, rules.Alternatives)]
    assert len(sets) > 40
    # One line of each shape (lines that differ only in their numbers read alike to nearly
    # every pattern): a third fewer lines to try each pattern on.
    by_shape: dict[str, str] = {}
    for case_id in corpus_case_ids()[::6]:
        for raw in corpus_log(case_id).split(b"\n")[:400]:
            line = decode(raw)
            by_shape.setdefault(re.sub(r"\d+", "0", line), line)
    lines = set(by_shape.values())
    lines |= {"Traceback ☃ (most recent call last):", "ÉRROR: CUDA error: out of memory"}
    # Read through stand-ins: a word, a space (Python's \x1c too) and a symbol outside ASCII.
    lines |= {"UCX\u3000ERROR failed", "UCX\x1cERROR failed", "模型.RuntimeError:"}
    lines |= {"gcc\u3000fatal : no input", "██████ 100%|RuntimeError: CUDA error: out of memory"}
    references = {id(each): [_with_screen(source) for source in each.sources] for each in sets}
    # Line by line, every set: the prefilter scans a line once for all of them, as the engine
    # reads; set by set, each set's pass would push the last's lines out of its memory.
    for line in sorted(lines)[shard::PREFILTER_SHARDS]:
        for each in sets:
            found = each.search(line)
            expected = next(
                (
                    match
                    for pattern, screen in references[id(each)]
                    if screen.search(line) and (match := pattern.search(line))
                ),
                None,
            )
            assert (found and found.span()) == (expected and expected.span()), (line, each.sources)


# A pattern's leading word boundaries and lookbehinds: dropping them only widens what it
# matches, and what is left starts on a literal that `re` finds by a fast scan.
_LEADING_ASSERTIONS = re.compile(r"^((?:\(\?[aiLmsux]+\))?)(?:\\b|\(\?<!(?:[^()\\]|\\.)*\))+")


def _with_screen(source: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The pattern, and a wider one that refuses most lines faster: a line the screen refuses
    the pattern refuses too."""
    return re.compile(source), re.compile(_LEADING_ASSERTIONS.sub(r"\1", source))


def test_only_short_lines_are_remembered() -> None:
    """A set remembers its answers for the lines it read last, but not for long ones: a log of
    16 KiB lines must not hold thousands of them in memory."""
    from app.diagnosis import rules

    rules.NATIVE_FAILURE._search.cache_clear()  # (a full cache would evict as it adds)
    before = rules.NATIVE_FAILURE._search.cache_info().currsize
    long_line = "x" * (rules.REMEMBERED_LINE_CHARS + 1) + " Segmentation fault"
    assert rules.NATIVE_FAILURE.search(long_line) is not None
    assert rules.NATIVE_FAILURE._search.cache_info().currsize == before
    assert rules.NATIVE_FAILURE.search("Segmentation fault (core dumped) x1") is not None
    assert rules.NATIVE_FAILURE._search.cache_info().currsize == before + 1
