"""Settings, read from the environment (prefix CAMPAIGN_DASH_) and from `.env`."""

from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="CAMPAIGN_DASH_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    # A file in the working directory: nothing to install, and one writer is plenty
    # for one engineer; point this at PostgreSQL when a team shares the dashboard.
    database_url: str = "sqlite:///campaign-dash.db"
    # Owner token. Unset: one is generated at first start, stored hashed, printed once.
    token: str | None = None
    # Public base URL used in printed login links and share links.
    public_url: str | None = None
    # Mark cookies Secure; set when the dashboard is served over HTTPS.
    secure_cookies: bool = False
