"""Settings, read from the environment (prefix CAMPAIGN_DASH_) and from `.env`."""

from pathlib import Path

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
    # A starting server whose log is silent this long is flagged as stalled.
    stall_seconds: float = 300.0
    # Named heartbeat events on live streams: often enough that proxies keep them open.
    heartbeat_seconds: float = 15.0
    # Log kept per attempt; past it the middle is dropped (head, tail, diagnosis kept).
    log_cap_mib: float = 512.0
    # SSH as OpenSSH would do it: the user's config, known hosts and agent.
    ssh_config: Path = Path("~/.ssh/config").expanduser()
    ssh_known_hosts: Path = Path("~/.ssh/known_hosts").expanduser()
    ssh_agent: bool = True
    # Where launched runs keep their files on each host (~ is the host's home): one folder
    # per run with its log, its process record and its exit status.
    runs_root: str = "~/.campaign-dash/runs"
    # How long a stop waits for the GPU memory to be back to what it was before the launch:
    # a process's is freed as it ends (0.2 s after a SIGKILL, on an H200), so what is still
    # held after this is held by something else, and the stop is not proven.
    gpu_release_seconds: float = 30.0
    # Host keys the owner trusted from the dashboard are written here, never elsewhere.
    trusted_hosts_file: Path = Path("campaign-dash.known_hosts")
    # Bounds on reading a request, so that idle and slow clients cannot hold connections (a
    # slowloris): its headers within this, from connecting or from the previous response...
    header_timeout_seconds: float = 10.0
    # ...and its body within this once the headers are in (bodies are 1 MiB at most: 35 KB/s).
    body_timeout_seconds: float = 30.0
    # An idle connection between requests (uvicorn's default). None of these bounds a
    # response: live streams stay open as long as their page does.
    keep_alive_seconds: float = 5.0
    # Connections open at once, live streams included (each open page holds one or two);
    # past it a new connection is answered 503 before anything is read. The process's open
    # file limit (ulimit -n) must be above it.
    max_connections: int = 4096
