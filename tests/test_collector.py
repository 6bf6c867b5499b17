"""`serve`'s garbage collection: survivors of a full collection are frozen while readers
stay, so the next walks only what came since; once the last reader has left, the garbage
they hold (cycles that died while frozen) is collected after all."""

import gc
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from app import collector as collector_module
from app.collector import Collector
from app.live import Bus, Hub, View
from tests.helpers import run_apart


class Node:
    """An object in a reference cycle: only a collection frees it."""

    def __init__(self) -> None:
        self.itself = self


@pytest.fixture
def collector() -> Iterator[Collector]:
    installed = Collector()
    # Only the test's own collections: another thread of this worker allocating must not
    # set one off between a test's step and its check.
    automatic = gc.isenabled()
    gc.disable()
    try:
        yield installed
    finally:  # this worker's other tests run with the default collection again
        installed.uninstall()
        gc.unfreeze()
        if automatic:
            gc.enable()


def test_a_full_collection_freezes_what_survived_it(collector: Collector) -> None:
    collector.install()
    kept = [Node() for _ in range(1000)]
    before = gc.get_freeze_count()
    gc.collect(1)  # a young collection freezes nothing
    # (another thread of this worker may free a frozen object meanwhile: the count never grows)
    assert gc.get_freeze_count() <= before
    gc.collect()
    assert gc.get_freeze_count() >= before + len(kept)
    # The next full collection walks only what came since: the frozen part is not in it.
    # (By identity: `in` would call every object's __eq__, a numpy array's among them.)
    oldest = {id(thing) for thing in gc.get_objects(2)}
    assert not any(id(node) in oldest for node in kept)


def test_garbage_frozen_while_readers_stayed_is_collected_once_they_are_gone(
    collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(collector_module, "THAW_AFTER", 1)
    collector.install()
    node = Node()
    gone = weakref.ref(node)
    gc.collect()  # survives, so it is frozen
    del node
    gc.collect()
    assert gone() is not None  # frozen: the collection never saw it die

    collector.readers_gone()
    assert gone() is None
    assert gc.get_freeze_count() > 0  # the survivors are frozen again


def test_readers_gone_waits_until_enough_was_frozen_to_be_worth_a_whole_walk(
    collector: Collector,
) -> None:
    collector.install()
    node = Node()
    gone = weakref.ref(node)
    gc.collect()
    del node
    collector.readers_gone()  # far fewer than THAW_AFTER objects frozen since install
    assert gone() is not None


def test_the_hub_says_when_its_last_reader_left(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    @contextmanager
    def no_session():  # type: ignore[no-untyped-def]
        yield None

    hub = Hub(Bus(), no_session, lambda *_: [], lambda *_: 0, heartbeat_s=30)
    monkeypatch.setattr(
        collector_module.COLLECTOR, "readers_gone", lambda: calls.append(len(hub.broadcasters))
    )

    async def two_readers_of_two_views() -> None:
        first = View(campaign_id=1, render=lambda *_: [])
        second = View(campaign_id=2, render=lambda *_: [])
        async with hub.subscribe((1, "json"), first, 0, 0):
            async with hub.subscribe((2, "json"), second, 0, 0):
                pass
            assert calls == []  # a reader of the first view is still here
        assert calls == [0]

    run_apart(two_readers_of_two_views())


def test_with_readers_always_there_a_full_collection_now_and_then_walks_everything(
    collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    collector.install()
    node = Node()
    gone = weakref.ref(node)
    gc.collect()  # survives: frozen
    del node
    gc.collect()
    assert gone() is not None
    # Ten minutes later (here: at once), a full collection thaws instead of freezing...
    monkeypatch.setattr(collector_module, "THAW_EVERY_S", 0.0)
    gc.collect()
    assert gc.get_freeze_count() == 0
    # ...so the next one walks everything and frees what died while frozen.
    monkeypatch.setattr(collector_module, "THAW_EVERY_S", 600.0)
    gc.collect()
    assert gone() is None
    assert gc.get_freeze_count() > 0  # and the survivors are frozen again


def test_after_the_clock_s_walk_a_thaw_counts_only_what_was_frozen_since(
    collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    collector.install()
    kept = [Node() for _ in range(1000)]
    gc.collect()
    grown = gc.get_freeze_count()
    assert grown - collector.frozen_at_thaw >= 1000
    monkeypatch.setattr(collector_module, "THAW_EVERY_S", 0.0)
    gc.collect()  # the clock's thaw
    monkeypatch.setattr(collector_module, "THAW_EVERY_S", 600.0)
    gc.collect()  # walks everything, freezes the survivors: the new base
    frozen = gc.get_freeze_count()
    # The base is the count just frozen: another thread of this worker may have freed a few
    # frozen objects since (never added any), far fewer than the thousand kept.
    assert 0 <= collector.frozen_at_thaw - frozen < len(kept)
    young = {id(thing) for generation in range(3) for thing in gc.get_objects(generation)}
    assert not any(id(node) in young for node in kept)  # the survivors are frozen again
    del kept
