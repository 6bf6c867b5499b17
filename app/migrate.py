"""Run the Alembic migrations of `migrations/` against a database URL, and tell autogenerate
which of the database's objects the models do not declare on purpose."""

from typing import Any

from alembic import command
from alembic.config import Config

from app.paths import resource_dir


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(resource_dir("migrations")))
    # ConfigParser treats % as interpolation; URLs may hold %-escaped passwords.
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(database_url), revision)


# The search index (migration 0017): FTS5 tables and their shadow tables on SQLite, pg_trgm
# GIN indexes on PostgreSQL, an index of lower(title) on both. The models cannot declare the
# first two and leave all three out, with the migration that makes them.
SEARCH_TABLES = ("campaign_search", "attempt_search", "note_search")
SEARCH_INDEXES = ("ix_attempt_title_lower",)


def declared_by_models(
    obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any
) -> bool:
    """Alembic's include_object: False for the search index's own objects."""
    if type_ == "table" and name and name.startswith(SEARCH_TABLES):
        return False
    return not (type_ == "index" and name and (name.endswith("_trgm") or name in SEARCH_INDEXES))
