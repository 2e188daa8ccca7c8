"""Judge configuration: LiteLLM's own `model_list` YAML with qadi's fields beside it.

An operator who already runs a LiteLLM proxy can reuse its config: each entry keeps
`model_name` and `litellm_params`; qadi adds `provider` (the maker, for the guard),
`substitute` (who grades when the guard skips this judge) and `rpm`. Global options live
under a `qadi:` key, which LiteLLM ignores.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from judges.makers import maker_from_table, model_name
from rubrics.errors import describe_validation_error

GuardLevel = Literal["provider", "model", "off"]

# litellm_params that choose where and how to connect, not what the judge model computes.
TRANSPORT_PARAMS = frozenset(
    {
        "api_key",
        "api_base",
        "base_url",
        "api_version",
        "organization",
        "timeout",
        "stream_timeout",
        "max_retries",
        "rpm",
        "tpm",
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_region_name",
        "vertex_project",
        "vertex_location",
        "vertex_credentials",
        "extra_headers",
        "headers",
    }
)
DEFAULT_SAMPLING = {"temperature": 0}


class JudgeConfigError(ValueError):
    """The judge configuration is unusable; the message names the entry and field."""


class JudgeEntry(BaseModel):
    model_config = ConfigDict(extra="allow")

    model_name: str = Field(min_length=1)
    litellm_params: dict[str, Any]
    provider: str | None = None
    substitute: str | None = None
    rpm: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _has_model(self) -> JudgeEntry:
        if not isinstance(self.litellm_params.get("model"), str):
            raise ValueError("litellm_params.model: required (e.g. 'openai/gpt-4.1')")
        return self

    @property
    def name(self) -> str:
        return self.model_name

    @property
    def model(self) -> str:
        return self.litellm_params["model"]

    @property
    def sampling(self) -> dict[str, Any]:
        """What the model computes with: every non-transport param, temperature 0 by default."""
        params = {k: v for k, v in self.litellm_params.items() if k not in TRANSPORT_PARAMS}
        params.pop("model")
        return {**DEFAULT_SAMPLING, **params}


class QadiOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    guard: GuardLevel = "provider"
    panel: list[str] | None = None
    makers: dict[str, str] = Field(default_factory=dict)
    num_retries: int = Field(default=2, ge=0, le=10)
    timeout: float = Field(default=60.0, gt=0)
    retry_after: float = Field(default=0.0, ge=0)
    allowed_fails: int = Field(default=3, ge=1)
    cooldown_time: float = Field(default=30.0, ge=0)


class JudgesConfig(BaseModel):
    model_config = ConfigDict(extra="allow")

    model_list: list[JudgeEntry] = Field(min_length=1)
    router_settings: dict[str, Any] = Field(default_factory=dict)
    qadi: QadiOptions = Field(default_factory=QadiOptions)

    @model_validator(mode="after")
    def _consistent(self) -> JudgesConfig:
        names = [e.name for e in self.model_list]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(
                f"model_list: model_name '{duplicates[0]}' appears twice; qadi needs one "
                "deployment per judge name"
            )
        for entry in self.model_list:
            if entry.substitute is not None and entry.substitute not in names:
                raise ValueError(
                    f"model_list.{entry.name}.substitute: '{entry.substitute}' is not a judge"
                )
        for name in self.qadi.panel or []:
            if name not in names:
                raise ValueError(f"qadi.panel: '{name}' is not a judge in model_list")
        return self

    def judge(self, name: str) -> JudgeEntry:
        for entry in self.model_list:
            if entry.name == name:
                return entry
        raise JudgeConfigError(
            f"judges: unknown judge '{name}' (configured: {', '.join(self.names)})"
        )

    @property
    def names(self) -> list[str]:
        return [e.name for e in self.model_list]

    @property
    def default_panel(self) -> list[str]:
        return self.qadi.panel or self.names

    def maker_of_judge(self, entry: JudgeEntry) -> str | None:
        return entry.provider or self.maker_of_model(entry.model)

    def maker_of_model(self, model: str) -> str | None:
        """Configured makers first (by full id or bare name), then the built-in table."""
        for key in (model, model_name(model)):
            if key in self.qadi.makers:
                return self.qadi.makers[key]
        return maker_from_table(model)


def parse_config(data: Any, source: str = "judges config") -> JudgesConfig:
    if not isinstance(data, dict):
        raise JudgeConfigError(f"{source}: expected a mapping with a 'model_list' key")
    try:
        return JudgesConfig.model_validate(data)
    except ValidationError as exc:
        raise JudgeConfigError(f"{source}: {describe_validation_error(exc)}") from None


def load_config(path: str | Path | None = None) -> JudgesConfig:
    """Load the judges file: the given path, else $QADI_JUDGES_CONFIG."""
    path = path or os.environ.get("QADI_JUDGES_CONFIG")
    if not path:
        raise JudgeConfigError(
            "judges config: none given; pass --config judges.yaml or set QADI_JUDGES_CONFIG"
        )
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise JudgeConfigError(f"{path}: cannot read judges config ({exc.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise JudgeConfigError(f"{path}: not valid YAML: {exc}") from None
    return parse_config(data, source=str(path))
