"""What a user's `pip install .` brings is enough to run every command: each third-party
module the app imports comes from a runtime dependency, not from the test extras."""

import ast
import re
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

ROOT = Path(__file__).parent.parent


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _name(spec: str) -> str:
    return _normalise(re.split(r"[\[<>=!~; (]", spec.strip(), maxsplit=1)[0])


def _runtime_distributions() -> set[str]:
    """The runtime dependencies and what they bring in turn (not their optional extras)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [
        _name(s) for s in project["dependencies"] + project["optional-dependencies"]["postgres"]
    ]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            specs = requires(name) or []
        except PackageNotFoundError:
            continue
        todo += [_name(s) for s in specs if "extra ==" not in s]
    return seen


def _imported_top_level_modules() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted((ROOT / "app").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def test_every_third_party_import_of_the_app_is_a_runtime_dependency() -> None:
    providers = packages_distributions()
    runtime = _runtime_distributions()
    missing = []
    for module, where in _imported_top_level_modules().items():
        if module == "app" or module in sys.stdlib_module_names:
            continue
        distributions = {_normalise(d) for d in providers.get(module, [])}
        assert distributions, f"{module} (imported by {where}) is not installed at all"
        if not distributions & runtime:
            missing.append(f"{module} (imported by {where}, from {sorted(distributions)})")
    assert missing == [], "imported by the app but only installed for the tests: " + ", ".join(
        missing
    )
