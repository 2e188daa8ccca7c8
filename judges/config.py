"""Judge configuration: LiteLLM's own proxy config YAML, accepted as it is, with qadi's
fields beside it.

An operator who already runs a LiteLLM proxy can reuse its config unchanged: each
`model_list` entry keeps `model_name` and `litellm_params`; several entries under one
`model_name` are one judge whose calls LiteLLM's router spreads over those deployments
(judges/client.py). qadi adds `provider` (the maker, for the guard), `substitute` (who grades
when the guard skips this judge) and `rpm`. `environment_variables` are exported as the proxy
exports them; the `router_settings` and `litellm_settings` that steer a judge call are
honoured (`PROXY_OPTIONS`, `ROUTER_ARGS`, `CALL_SETTINGS`), and everything else, such as
`general_settings`, is named in one warning. Global options live under a `qadi:` key, which
LiteLLM ignores; set there they win over the proxy's settings.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from judges.logprobs import DEFAULT_TOP_LOGPROBS
from judges.makers import maker_from_table, model_name
from judges.templates import TemplateError, TemplateRegistry
from rubrics.errors import describe_validation_error

GuardLevel = Literal["provider", "model", "off"]
# How a judge is asked for its verdict's JSON: `json_schema` (OpenAI structured outputs,
# vLLM), `json_object` (JSON mode, the schema in the prompt and in a `schema` field, which
# llama-cpp-python and llama.cpp's server read), `none` (the schema in the prompt only, for
# servers that take no response_format; the reply is parsed as strictly either way).
StructuredOutput = Literal["json_schema", "json_object", "none"]
MODES: tuple[str, ...] = get_args(StructuredOutput)  # in the order `qadi judges check` tries
# routes whose servers always return token logprobs, so qadi asks for them by default
LOGPROB_ROUTES = ("hosted_vllm/",)
MAX_TOP_LOGPROBS = 20  # OpenAI's and vLLM's default ceiling
# How a judge is called: `lean` over aiohttp straight to an OpenAI-compatible server
# (judges/transport.py), `litellm` through LiteLLM. Lean by default on LEAN_DEFAULT_ROUTES.
Transport = Literal["lean", "litellm"]
LEAN_ROUTES = ("hosted_vllm/", "openai/")  # OpenAI's chat API: the ones lean can speak
LEAN_DEFAULT_ROUTES = ("hosted_vllm/",)

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
        *("weight", "order", "max_parallel_requests", "tags"),
    }
)
# litellm_params only LiteLLM's router reads (deployment choice), never sent to a provider
ROUTER_ONLY_PARAMS = frozenset({"rpm", "tpm", "weight", "order", "max_parallel_requests", "tags"})
# (section, key) of a proxy config -> the qadi option it sets unless `qadi:` sets that option.
# Retries stay qadi's own (judges/client.py): LiteLLM's retry counts are never passed on.
PROXY_OPTIONS = {
    ("router_settings", "num_retries"): "num_retries",
    ("router_settings", "retry_after"): "retry_after",
    ("router_settings", "timeout"): "timeout",
    ("router_settings", "allowed_fails"): "allowed_fails",
    ("router_settings", "cooldown_time"): "cooldown_time",
    ("litellm_settings", "num_retries"): "num_retries",
    ("litellm_settings", "request_timeout"): "timeout",
}
# router_settings given to litellm.Router for a judge with several deployments
ROUTER_ARGS = frozenset(
    {
        "routing_strategy",
        "routing_strategy_args",
        "allowed_fails",
        "cooldown_time",
        "enable_pre_call_checks",
        "redis_host",
        "redis_port",
        "redis_password",
        "redis_url",
    }
)
# litellm_settings sent with every judge call
CALL_SETTINGS = frozenset({"drop_params"})
# top-level keys qadi reads; any other top-level key of a proxy config is reported as ignored
KNOWN_SECTIONS = frozenset(
    {"model_list", "router_settings", "litellm_settings", "environment_variables", "qadi"}
)
_log = logging.getLogger("qadi")
_warned: set[str] = set()
DEFAULT_SAMPLING = {"temperature": 0}


class JudgeConfigError(ValueError):
    """The judge configuration is unusable; the message names the entry and field."""


MAX_SAMPLES = 20


class ConfidenceSource(BaseModel):
    """Where a judge's confidence in its verdict comes from. `token` (the default): its
    token probabilities, where the server returns them (`logprobs`). `sampling`: `samples`
    calls at `temperature`, the verdict the most of them give, and as its confidence the
    share of the samples that give it; for judges without logprobs (Anthropic, OpenAI's
    reasoning models), at `samples` times the calls. `verbalised` (opt-in, and marked as
    such wherever it appears): the judge states its confidence in its JSON reply, a number
    nothing checks but the calibration (LLMs' stated confidences are often overconfident;
    Xiong et al. 2024)."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["token", "sampling", "verbalised"] = "token"
    samples: int = Field(default=5, ge=2, le=MAX_SAMPLES, description="calls per verdict")
    temperature: float = Field(default=0.7, gt=0, le=2, description="each sample's temperature")
    score_values: bool = Field(
        default=False,
        description="token confidence of a scale whose values are not one token each (0-10, "
        "0-100): each allowed value scored as a whole by the server (vLLM's prompt_logprobs, "
        "one call per value and dimension; judges/value_scoring.py)",
    )

    @property
    def calls_per_verdict(self) -> int:
        return self.samples if self.source == "sampling" else 1


class JudgeEntry(BaseModel):
    model_config = ConfigDict(extra="allow")

    model_name: str = Field(min_length=1)
    litellm_params: dict[str, Any]
    provider: str | None = None
    substitute: str | None = None
    rpm: int | None = Field(default=None, gt=0)
    structured_output: StructuredOutput | None = Field(
        default=None, description="json_schema (default) | json_object | none"
    )
    logprobs: bool | int | None = Field(
        default=None,
        description="ask for token probabilities: true, false or the number of alternatives "
        f"per token (1-{MAX_TOP_LOGPROBS}); default on for hosted_vllm/ routes",
    )
    confidence: ConfidenceSource = Field(
        default_factory=ConfidenceSource,
        description="where the verdict's confidence comes from: token probabilities (default) "
        "or sampling (k calls at temperature T, the share agreeing with the most common verdict)",
    )
    transport: Transport | None = Field(
        default=None,
        description="lean (aiohttp straight to the OpenAI-compatible server at api_base) or "
        "litellm; default lean for hosted_vllm/ routes with an api_base, litellm otherwise",
    )

    @model_validator(mode="after")
    def _has_model(self) -> JudgeEntry:
        if not isinstance(self.litellm_params.get("model"), str):
            raise ValueError("litellm_params.model: required (e.g. 'openai/gpt-4.1')")
        if not isinstance(self.logprobs, bool | None) and not (
            1 <= self.logprobs <= MAX_TOP_LOGPROBS
        ):
            raise ValueError(f"logprobs: {self.logprobs} alternatives; give 1-{MAX_TOP_LOGPROBS}")
        if self.confidence.source == "sampling":
            fixed = sorted({"seed", "n"} & set(self.litellm_params))
            if fixed:
                raise ValueError(
                    f"confidence: sampling draws independent samples; litellm_params."
                    f"{fixed[0]} would make them one answer repeated (remove it)"
                )
        if self.confidence.score_values and self.confidence.source != "token":
            raise ValueError("confidence.score_values: token confidence only, not sampling")
        if self.transport == "lean":
            self._lean_possible()
        if self.confidence.score_values and not self.model.startswith(LOGPROB_ROUTES):
            raise ValueError(
                "confidence.score_values: only vLLM (hosted_vllm/ routes) scores a given "
                "completion (prompt_logprobs); OpenAI, Anthropic and llama.cpp's server do not"
            )
        return self

    def _lean_possible(self) -> None:
        """`transport: lean` speaks OpenAI's chat API to one server: it needs such a route
        and the server's URL."""
        if not self.model.startswith(LEAN_ROUTES):
            raise ValueError(
                f"transport: lean calls OpenAI-compatible servers ({' or '.join(LEAN_ROUTES)} "
                f"routes), not '{self.model}'; remove it or write `transport: litellm`"
            )
        if not self._has_server:
            raise ValueError(
                "transport: lean needs litellm_params.api_base (the server's URL, e.g. "
                "http://127.0.0.1:8000/v1)"
            )

    @property
    def lean(self) -> bool:
        """Whether this deployment is called by the lean transport (judges/transport.py)."""
        if self.transport is not None:
            return self.transport == "lean"
        return self._has_server and self.model.startswith(LEAN_DEFAULT_ROUTES)

    @property
    def _has_server(self) -> bool:
        """Whether the entry names its server's URL (else LiteLLM finds it in the env)."""
        return bool(self.litellm_params.get("api_base") or self.litellm_params.get("base_url"))

    @property
    def output_mode(self) -> StructuredOutput:
        return self.structured_output or "json_schema"

    @property
    def top_logprobs(self) -> int | None:
        """Alternatives per token to ask for, or None when token probabilities are off."""
        wanted = self.logprobs
        if wanted is None:
            wanted = self.model.startswith(LOGPROB_ROUTES)
        if wanted is False:
            return None
        return DEFAULT_TOP_LOGPROBS if wanted is True else wanted

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
    # the cooldown (judges/client.py `Cooldown`): a judge rests `cooldown_time` s once at
    # least `allowed_fails` of its calls that ended in the last `failure_window` s failed
    # (after retries) and all of them failed, or a binomial test puts their rate above
    # `failure_rate`
    allowed_fails: int = Field(default=3, ge=1)
    cooldown_time: float = Field(default=30.0, ge=0)
    failure_rate: float = Field(default=0.5, gt=0, le=1)
    failure_window: float = Field(default=60.0, gt=0)
    # a 429's Retry-After is waited for up to this many seconds; a longer one fails the call
    max_retry_wait: float = Field(default=10.0, ge=0)
    templates: list[str] = Field(
        default_factory=list,
        description="your prompt template files or directories (relative to the config file)",
    )

    @field_validator("guard", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        """YAML 1.1 reads an unquoted `off` (and `no`) as false: `guard: off`, as written in
        the docs, means off. An unquoted `on`/`yes` (true) names no level."""
        if value is False:
            return "off"
        if value is True:
            raise ValueError("`on` is not a level: write provider, model or off")
        return value


class JudgesConfig(BaseModel):
    model_config = ConfigDict(extra="allow")

    model_list: list[JudgeEntry] = Field(min_length=1)
    router_settings: dict[str, Any] = Field(default_factory=dict)
    litellm_settings: dict[str, Any] = Field(default_factory=dict)
    environment_variables: dict[str, Any] = Field(default_factory=dict)
    qadi: QadiOptions = Field(default_factory=QadiOptions)
    _templates: TemplateRegistry | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _proxy_options(cls, data: Any) -> Any:
        """The proxy's retry, timeout and cooldown settings become qadi's, unless `qadi:`
        sets them itself (router_settings before litellm_settings, as in the proxy)."""
        if not isinstance(data, dict):
            return data
        derived: dict[str, Any] = {}
        for (section, key), option in PROXY_OPTIONS.items():
            settings = data.get(section)
            if isinstance(settings, dict) and key in settings and option not in derived:
                derived[option] = settings[key]
        qadi = data.get("qadi")
        if derived and (qadi is None or isinstance(qadi, dict)):
            data = {**data, "qadi": {**derived, **(qadi or {})}}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> JudgesConfig:
        for name in self.names:
            self._merge_deployments(name)
        names = self.names
        for entry in self.model_list:
            if entry.substitute is not None and entry.substitute not in names:
                raise ValueError(
                    f"model_list.{entry.name}.substitute: '{entry.substitute}' is not a judge"
                )
        for name in self.qadi.panel or []:
            if name not in names:
                raise ValueError(f"qadi.panel: '{name}' is not a judge in model_list")
        return self

    def _merge_deployments(self, name: str) -> None:
        """Deployments of one judge share its qadi fields (given on any of them, never
        contradicting) and its maker, so the guard means the same whichever one answers."""
        group = self.deployments(name)
        if len(group) == 1:
            return
        if any(e.transport == "lean" for e in group):
            raise ValueError(
                f"model_list.{name}.transport: lean calls one server, and this judge has "
                f"{len(group)} deployments that LiteLLM's router balances; remove `transport: lean`"
            )
        for field in ("provider", "substitute", "rpm", "structured_output", "logprobs"):
            values = {getattr(e, field) for e in group} - {None}
            if len(values) > 1:
                raise ValueError(
                    f"model_list.{name}.{field}: its deployments disagree "
                    f"({', '.join(sorted(map(str, values)))})"
                )
            for entry in group:
                setattr(entry, field, next(iter(values), None))
        makers = {self.maker_of_judge(e) for e in group}
        if len(makers) > 1:
            raise ValueError(
                f"model_list.{name}: its deployments come from different makers "
                f"({', '.join(sorted(str(m) for m in makers))}); set `provider` on it"
            )
        samplings = [e.sampling for e in group]
        if any(s != samplings[0] for s in samplings):
            raise ValueError(
                f"model_list.{name}: its deployments differ in sampling parameters "
                f"({samplings[0]} vs {next(s for s in samplings if s != samplings[0])}); "
                "one judge grades with one set"
            )

    def deployments(self, name: str) -> list[JudgeEntry]:
        """Every model_list entry of judge `name` (LiteLLM load-balances over them)."""
        return [e for e in self.model_list if e.name == name]

    @property
    def router_args(self) -> dict[str, Any]:
        """The router_settings that steer how LiteLLM picks one deployment of a judge."""
        return {k: v for k, v in self.router_settings.items() if k in ROUTER_ARGS}

    @property
    def call_settings(self) -> dict[str, Any]:
        """The litellm_settings sent with every judge call."""
        return {k: v for k, v in self.litellm_settings.items() if k in CALL_SETTINGS}

    def ignored_settings(self) -> list[str]:
        """What a proxy config holds that changes nothing about a judge call."""
        ignored = sorted(k for k in (self.model_extra or {}) if k not in KNOWN_SECTIONS)
        for section, honoured in (
            ("router_settings", ROUTER_ARGS),
            ("litellm_settings", CALL_SETTINGS),
        ):
            mapped = {key for sec, key in PROXY_OPTIONS if sec == section}
            ignored += sorted(
                f"{section}.{k}" for k in getattr(self, section) if k not in honoured | mapped
            )
        return ignored

    def judge(self, name: str) -> JudgeEntry:
        for entry in self.model_list:
            if entry.name == name:
                return entry
        raise JudgeConfigError(
            f"judges: unknown judge '{name}' (configured: {', '.join(self.names)})"
        )

    @property
    def names(self) -> list[str]:
        """Judge names in file order, each once however many deployments it has."""
        return list(dict.fromkeys(e.name for e in self.model_list))

    @property
    def templates(self) -> TemplateRegistry:
        """The bundled templates and the files of `qadi.templates`, read once."""
        if self._templates is None:
            self._templates = TemplateRegistry(Path(p) for p in self.qadi.templates)
        return self._templates

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
        config = JudgesConfig.model_validate(data)
    except ValidationError as exc:
        raise JudgeConfigError(f"{source}: {describe_validation_error(exc)}") from None
    try:
        config.templates  # noqa: B018  (read and check the user's templates now, not per call)
    except TemplateError as exc:
        raise JudgeConfigError(f"{source}: qadi.templates: {exc}") from None
    _warn_ignored(config, source)
    return config


def _warn_ignored(config: JudgesConfig, source: str) -> None:
    """One warning per process for each distinct set of ignored settings, not one per load
    (the service, each worker and each CLI command load the same file)."""
    ignored = config.ignored_settings()
    message = f"{source}: ignored, they do not apply to judge calls: {', '.join(ignored)}"
    if ignored and message not in _warned:
        _warned.add(message)
        _log.warning(message)


# Where a newcomer without a judges file starts from (both are in the repository).
_STARTERS = (
    "start from examples/judges.yaml, or grade with the stand-ins of service/sample/judges.yaml"
)


def load_config(path: str | Path | None = None) -> JudgesConfig:
    """Load the judges file: the given path, else $QADI_JUDGES_CONFIG."""
    path = path or os.environ.get("QADI_JUDGES_CONFIG")
    if not path:
        raise JudgeConfigError(
            "judges config: none given; pass --config judges.yaml or set QADI_JUDGES_CONFIG "
            f"({_STARTERS})"
        )
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise JudgeConfigError(f"{path}: no such judges config ({_STARTERS})") from None
    except OSError as exc:
        raise JudgeConfigError(f"{path}: cannot read judges config ({exc.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise JudgeConfigError(f"{path}: not valid YAML: {yaml_problem(exc)}") from None
    return parse_config(_templates_beside(data, Path(path).parent), source=str(path))


def yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's several-line message as one line: the problem and where it is."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"{problem}{where}"


def _templates_beside(data: Any, directory: Path) -> Any:
    """`qadi.templates` paths read relative to the config file, wherever qadi runs."""
    qadi = data.get("qadi") if isinstance(data, dict) else None
    if not isinstance(qadi, dict) or not isinstance(qadi.get("templates"), list):
        return data
    paths = [str(directory / p) if isinstance(p, str) else p for p in qadi["templates"]]
    return {**data, "qadi": {**qadi, "templates": paths}}
