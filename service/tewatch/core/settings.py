"""Service settings, read from the environment (TEWATCH_*) or passed explicitly by the CLI."""

from pathlib import Path

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_database_url() -> str:
    return f"sqlite:///{Path.cwd() / 'tewatch.sqlite3'}"


def normalise_database_url(url: str) -> str:
    """Accept plain `postgresql://` (and `postgres://`) and route it through psycopg 3."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TEWATCH_")

    database_url: str = Field(default_factory=default_database_url)
    max_upload_bytes: int = 64 * 1024 * 1024
    max_upload_results: int = Field(50_000, ge=1)  # result rows one upload may create
    max_upload_cases: int = Field(10_000, ge=1)  # cases one upload may create
    public_url: str = "http://127.0.0.1:8000"
    read_token_required: bool = False
    project_name: str = ""  # named beside the dashboard's brand; else what the store holds
    dashboard_cache_entries: int = 64  # rendered overview/matrix contents kept per store state; 0: none
    dashboard_cache_mb: int = Field(64, ge=0)  # and the memory they may hold in all
    lock_wait_seconds: float = Field(30.0, gt=0)  # a writer's wait for a lock before answering 503
    database_connections: int = Field(50, ge=2)  # the most the service opens; a wait for one is a lock wait
    request_head_seconds: float = Field(20.0, gt=0)  # a request's line and headers, else 408 and closed
    # detection and webhooks
    detect_after_upload: bool = True
    webhook_worker: bool = True  # deliver webhooks from inside the service
    webhook_poll_seconds: float = 1.0
    webhook_timeout_seconds: float = 10.0  # each step of a delivery (connect, a read, a write)
    webhook_deadline_seconds: float = Field(30.0, gt=0)  # a whole delivery, however slow the receiver
    webhook_parallel: int = Field(8, ge=1)  # deliveries in flight at once, one per subscription
    webhook_allow_loopback: bool = False  # receivers on 127.0.0.1/::1 (tewatch campaign's); else refused
    webhook_redeliveries_per_minute: int = Field(10, ge=1)  # per subscription, through the API
    webhook_max_attempts: int = 10
    webhook_backoff_seconds: float = 5.0  # first retry; doubles each time
    webhook_backoff_max_seconds: float = 3600.0
    # GitHub pull requests (tewatch.github): off while github_repository is empty
    github_repository: str = ""  # owner/name of the repository the pull requests are in
    github_api_url: str = "https://api.github.com"
    github_token: SecretStr | None = None
    github_app_id: str = ""
    github_app_private_key: SecretStr | None = None  # PEM text, or
    github_app_private_key_file: Path | None = None
    github_app_installation_id: int | None = None
    github_status_context: str = "tewatch"

    @field_validator("database_url")
    @classmethod
    def _normalise(cls, url: str) -> str:
        if url.startswith("sqlite") and (
            url.rstrip("/") in ("sqlite:", "sqlite:/") or ":memory:" in url or "mode=memory" in url
        ):
            raise ValueError(
                f"{url!r} is an in-memory SQLite database, one connection's alone: the service opens many "
                "(give a file, e.g. sqlite:///tewatch.sqlite3)"
            )
        return normalise_database_url(url)

    @model_validator(mode="after")
    def _github_complete(self) -> "Settings":
        from tewatch.core.github_config import github_config

        github_config(self)  # raises ValueError naming the setting that is missing or wrong
        return self
