"""Run the Alembic migrations of `migrations/` against a database URL."""

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
