"""Garbage collection that does not stall live readers as they arrive.

A full collection walks every object that survived the last one. While 2,000 readers join a
share link, the heap grows fivefold and each full collection walks all of it (50 ms, then
100, 160, 200 ms at 430,000 objects on two cores): every stream and the owner's writes stall
with it (bench/README.md). Here what survives a full collection is frozen, so the next one
walks only what came since. Frozen objects are never collected: garbage among them (a stream's
cycles, once its reader left) waits for a thaw. Once the last reader has left (nobody left to
stall) they are thawed and collected at once, if enough came to matter; with readers always
there, every ten minutes the next full collection walks everything once.
"""

import gc
import time
from typing import Any

# Thawing walks the whole heap (about 40 ms for start-up's 130,000 objects): only worth it
# once this many objects were frozen since the last thaw.
THAW_AFTER = 50_000
# However many readers stay: one long walk this often, so that frozen garbage is bounded.
THAW_EVERY_S = 600.0


class Collector:
    def __init__(self) -> None:
        self.installed = False
        self.frozen_at_thaw = 0
        self.thawed_at = time.monotonic()
        self._walking = False  # thawed by the clock: the next full collection walks it all

    def install(self) -> None:
        """From now on, survivors of each full collection are frozen (`serve` only: it
        lives as long as its readers; tests and one-shot commands keep the default)."""
        gc.collect()
        gc.freeze()
        self.frozen_at_thaw = gc.get_freeze_count()
        if not self.installed:
            gc.callbacks.append(self._after_collection)
            self.installed = True

    def uninstall(self) -> None:
        if self.installed:
            gc.callbacks.remove(self._after_collection)
            self.installed = False

    def readers_gone(self) -> None:
        """No live reader is left: thaw and collect what the frozen part holds of garbage
        (cycles that died while frozen), then freeze again."""
        if not self.installed or gc.get_freeze_count() - self.frozen_at_thaw < THAW_AFTER:
            return
        gc.unfreeze()
        self.thawed_at = time.monotonic()
        gc.collect()  # freezes the survivors through the callback
        self.frozen_at_thaw = gc.get_freeze_count()

    def _after_collection(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info["generation"] != 2:
            return
        if time.monotonic() - self.thawed_at >= THAW_EVERY_S:
            gc.unfreeze()  # the next full collection walks everything, then freezes again
            self.thawed_at = time.monotonic()
            self._walking = True
        else:
            gc.freeze()
            if self._walking:  # what is frozen now is the base the next thaw counts from
                self.frozen_at_thaw = gc.get_freeze_count()
                self._walking = False


COLLECTOR = Collector()
