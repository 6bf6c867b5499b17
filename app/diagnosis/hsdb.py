"""Compiled Hyperscan databases, kept between runs: a compile takes longer than a
`campaign-dash diagnose` of most logs, loading one a fraction of a millisecond. A missing,
unreadable, foreign (another CPU's) or unwritable cache, or no home to keep it in, only means
a compile."""

import contextlib
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hyperscan

_CACHE_ERRORS = (OSError, RuntimeError, hyperscan.error, ValueError, TypeError)
KEPT_DATABASES = 8  # of each kind: each release's patterns (and custom readiness patterns)


def cached_database(
    kind: str, expressions: list[bytes], ids: list[int], flags: list[int]
) -> hyperscan.Database:
    """The block-mode database of these expressions, from the cache when it holds it.
    Raises hyperscan.error when they do not compile."""
    key = hashlib.sha256(
        repr((getattr(hyperscan, "__version__", ""), expressions, ids, flags)).encode()
    )
    name = f"{kind}-{key.hexdigest()[:32]}.hsdb"
    with contextlib.suppress(*_CACHE_ERRORS):
        return hyperscan.loadb((cache_dir() / name).read_bytes(), hyperscan.HS_MODE_BLOCK)
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(expressions=expressions, ids=ids, elements=len(expressions), flags=flags)
    with contextlib.suppress(*_CACHE_ERRORS):
        cached = cache_dir() / name
        _write_atomically(cached, hyperscan.dumpb(database))
        _forget_stale(cached.parent, kind)
    return database


def cached_json(kind: str, material: object, build: Callable[[], Any]) -> Any:
    """build()'s answer for this material (what it is worked out from), a value JSON keeps,
    from the cache when it holds it: worked out afresh, it would cost every run's start."""
    key = hashlib.sha256(repr(material).encode())
    name = f"{kind}-{key.hexdigest()[:32]}.json"
    with contextlib.suppress(*_CACHE_ERRORS):
        return json.loads((cache_dir() / name).read_bytes())
    value = build()
    with contextlib.suppress(*_CACHE_ERRORS):
        cached = cache_dir() / name
        _write_atomically(cached, json.dumps(value).encode())
        _forget_stale(cached.parent, kind, ".json")
    return value


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "campaign-dash"


def _forget_stale(folder: Path, kind: str, suffix: str = ".hsdb") -> None:
    """Only the most recently written databases stay: older releases' never load again."""
    stored = sorted(folder.glob(f"{kind}-*{suffix}"), key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in stored[KEPT_DATABASES:]:
        stale.unlink(missing_ok=True)


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, prefix=".scan-") as file:
        file.write(data)
    try:
        os.replace(file.name, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(file.name)


_SCRATCHES = threading.local()


def scratch_for(database: hyperscan.Database) -> hyperscan.Scratch:
    """A scan writes to its scratch: each thread has its own for each database (held beside
    it, so that the id names that database for as long as its scratch is kept)."""
    kept: dict[int, tuple[hyperscan.Database, hyperscan.Scratch]]
    kept = _SCRATCHES.__dict__.setdefault("by_database", {})
    pair = kept.get(id(database))
    if pair is None or pair[0] is not database:
        pair = kept[id(database)] = (database, hyperscan.Scratch(database))
    return pair[1]
