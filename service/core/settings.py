"""Service settings, read from the environment (TEWATCH_*) or passed explicitly by the CLI."""

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATABASE_URL = f"sqlite:///{Path.cwd() / 'tewatch.sqlite3'}"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TEWATCH_")

    database_url: str = Field(default=DEFAULT_DATABASE_URL)
    max_upload_bytes: int = 64 * 1024 * 1024
    public_url: str = "http://127.0.0.1:8000"
    read_token_required: bool = False
