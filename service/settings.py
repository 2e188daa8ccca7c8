"""Service settings, read from the environment with the prefix QADI_ (pydantic-settings)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from platformdirs import user_data_dir
from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_data_dir() -> Path:
    """The per-user data directory (platformdirs; ~/.local/share/qadi on Linux). The default
    database lives there, so every command finds the same database whatever directory it
    runs from."""
    return Path(user_data_dir("qadi", appauthor=False))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="QADI_", extra="ignore")

    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="where local state lives: the default SQLite database, the demo key",
    )
    database_url: str = Field(
        default="",
        description="SQLAlchemy URL; the SQLite file DATA_DIR/qadi.db when unset",
    )
    judges_config: Path | None = Field(default=None, description="judges YAML file")
    auth: Literal["on", "off"] = Field(
        default="on",
        description="off: no API key needed (refused on a non-loopback address without "
        "`qadi serve --insecure`)",
    )
    max_body_bytes: int = Field(
        default=1024 * 1024, gt=0, description="largest request body; a larger one is a 413"
    )
    max_text_chars: int = Field(
        default=100_000, gt=0, description="longest prompt, response or reference, in characters"
    )
    max_criteria: int = Field(default=100, gt=0, description="most criteria in one rubric")
    max_batch_items: int = Field(default=100, gt=0, description="most items in POST /judge/batch")
    report_strata_max: int = Field(
        default=200,
        gt=0,
        description="most strata one calibration report computes (the values of its `by` "
        "attributes, summed): more is refused before any work (422; the CLI's error)",
    )
    page_size_max: int = Field(
        default=500, gt=0, description="most rows one page of a list endpoint returns"
    )
    judge_concurrency: int = Field(
        default=256, gt=0, description="judge calls in flight per process; beyond it 503"
    )
    commit_linger_ms: float = Field(
        default=10.0,
        ge=0,
        le=1000,
        description="how long a POST /judge transaction about to start small waits for more "
        "requests to join it, when at least `commit_siblings` others are in flight (group "
        "commit); 0 = never",
    )
    commit_siblings: int = Field(
        default=5,
        ge=1,
        le=10_000,
        description="the POST /judge requests in flight besides those waiting that make a "
        "small group-commit transaction wait `commit_linger_ms` (as PostgreSQL's "
        "commit_siblings)",
    )
    rate_limit_per_minute: int = Field(
        default=0,
        ge=0,
        description="requests per API key per minute: POST /judge, POST /probes and each new "
        "judge call of a probe run (which waits for the window); 0 = off",
    )
    probe_max_calls: int = Field(
        default=20_000,
        gt=0,
        description="most judge calls one POST /probes run may plan, stored or new; a larger "
        "run is refused (422) before any call, whatever its `max_calls`",
    )
    probe_runs_per_key: int = Field(
        default=1,
        gt=0,
        description="POST /probes runs one API key may have going at once, over every worker "
        "and replica; another is refused (429) until one ends",
    )
    report_link_secret: SecretStr | None = Field(
        default=None,
        description="HMAC key of signed report links; unset, one kept in the database",
    )
    reap_interval_seconds: float = Field(
        default=15.0, gt=0, description="how often abandoned pending requests are closed"
    )
    database_wait_seconds: float = Field(
        default=10.0,
        gt=0,
        description="longest wait for SQLite's write lock or a pooled connection; past it 503",
    )
    project: str = Field(
        default="default",
        description="the project CLI commands work on when --project is not given, and the "
        "one every caller of a service without keys (QADI_AUTH=off) belongs to",
    )
    metrics_auth: Literal["off", "admin"] = Field(
        default="off",
        description="admin: GET /metrics needs an admin-scope key. Its numbers (judge costs, "
        "calibration gauges) are every project's, labelled `project`: set admin when teams "
        "that should not see each other's numbers can reach the service",
    )
    metrics_report_judges: int = Field(
        default=10,
        gt=0,
        description="calibration gauges of GET /metrics: judges per stored report, those with "
        "the most items (qadi_calibration_gauges_omitted counts the rest)",
    )
    metrics_report_strata: int = Field(
        default=20,
        gt=0,
        description="calibration gauges of GET /metrics: strata per stored report besides "
        "`overall`, those with the most items (qadi_calibration_gauges_omitted counts the rest)",
    )
    keep_alive_seconds: float = Field(
        default=75.0,
        gt=0,
        description="how long an idle HTTP connection stays open (above clients' pool and "
        "load balancers' idle times, so they close it first)",
    )
    page_bytes_max: int = Field(
        default=8_000_000,
        gt=0,
        description="most bytes of texts one page of a list endpoint returns (GET /sme/queue): "
        "a page stops early, with a cursor to the rest, rather than carry long answers past it",
    )
    sme_overlap_share: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="share of queued items graded by two SMEs, blind to each other, for "
        "their agreement",
    )
    sme_route_by: list[str] = Field(
        default=["dialect"],
        description="item attributes whose value an SME must have among her expertise tags "
        "to get the item (the first one an item has routes it; e.g. dialect=egy)",
    )
    sme_queue_per_key_per_day: int = Field(
        default=2000,
        ge=0,
        description="most items one API key may add to the SME queue in 24 h (POST /judge "
        "with trust); past it a verdict is still answered, the item not queued; 0 = no limit",
    )
    workbench_session_hours: float = Field(
        default=168.0,
        gt=0,
        description="how long a workbench sign-in lasts in a browser (an invite link opens "
        "one session; revoking the person ends it at once)",
    )
    workbench_invite_hours: float = Field(
        default=72.0, gt=0, description="how long an invite link works (once) before it expires"
    )
    public_url: str = Field(
        default="",
        description="the address people reach the service at, for invite links (e.g. "
        "https://qadi.example.org); default: the address a request came to, and for `qadi "
        "sme invite` http://127.0.0.1:QADI_PORT",
    )
    report_workers: int = Field(
        default=1,
        ge=0,
        le=64,
        description="worker processes that compute POST /estimates, POST /calibration/reports "
        "and the recalibrator's checks and runs, off the process that serves POST /judge (made "
        "at the first such work); 0 computes in the serving process's threads",
    )
    report_nice: int = Field(
        default=10,
        ge=0,
        le=19,
        description="niceness each report worker adds to itself (Unix scheduling priority; "
        "higher is lower): with the cores contended, POST /judge is served first and a report "
        "or estimate takes the CPU left; 0 competes as an equal",
    )
    retain_raw_days: int | None = Field(
        default=None,
        ge=1,
        description="`qadi db retain`: drop the raw replies and rationales of judgments older "
        "than this many days (verdicts, scores, confidences and token probabilities stay, so "
        "reports are unchanged); unset keeps them forever",
    )
    recalibration_interval_seconds: float = Field(
        default=30.0,
        ge=0,
        description="how often each service process checks its project's calibration scopes "
        "(qadi recalibration add) for a run that is due or an audit to make; 0 = never (a "
        "deployment that leaves it to one process of its own)",
    )
    sme_reservation_minutes: float = Field(
        default=30.0,
        gt=0,
        description="how long an item an SME opened stays hers; then it returns to the queue",
    )


    @model_validator(mode="after")
    def _default_database(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite:///{(self.data_dir / 'qadi.db').resolve()}"
        return self


@lru_cache
def get_settings() -> Settings:
    return Settings()
