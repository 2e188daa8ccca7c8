"""Service settings, read from the environment with the prefix QADI_ (pydantic-settings)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DB_PATH = Path("var") / "qadi.db"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="QADI_", extra="ignore")

    database_url: str = Field(
        default=f"sqlite:///{DEFAULT_DB_PATH}",
        description="SQLAlchemy URL; SQLite file var/qadi.db when unset",
    )
    judges_config: Path | None = Field(default=None, description="judges YAML file")
    auth: Literal["on", "off"] = "on"
    max_body_bytes: int = Field(default=1024 * 1024, gt=0)
    max_text_chars: int = Field(default=100_000, gt=0)
    max_criteria: int = Field(default=100, gt=0)
    max_batch_items: int = Field(default=100, gt=0)
    page_size_max: int = Field(default=500, gt=0)
    judge_concurrency: int = Field(
        default=256, gt=0, description="judge calls in flight per process; beyond it 503"
    )
    rate_limit_per_minute: int = Field(
        default=0, ge=0, description="POST /judge requests per API key per minute; 0 = off"
    )
    report_link_secret: SecretStr | None = Field(
        default=None, description="HMAC key of signed report links; a random one per process"
    )
    reap_interval_seconds: float = Field(
        default=15.0, gt=0, description="how often abandoned pending requests are closed"
    )


@lru_cache
def get_settings() -> Settings:
    return Settings()
