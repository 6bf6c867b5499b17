"""Where templates, static files and migrations are, from a checkout or a wheel."""

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """A top-level resource folder: bundled in the wheel, or beside the package in a checkout."""
    for candidate in (_PACKAGE / "_bundled" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"campaign-dash resource folder {name!r} not found near {_PACKAGE}")
