"""Versioned prompt templates: the bundled ones (judges/templates/NAME.vVERSION.yaml), the
user's (files named in the judges config, or objects inline in a rubric or a request), their
content hashes, and template references.

A template is data: its messages' text and how the reply is read (`output`). The hash of
that content is stored with every judgment, so a report can say which template produced
which grade, whether it shipped with qadi or came with a request. Bundled templates are
files so a prompt change is a reviewed diff and a new hash.

Two syntaxes: `jinja2` (the default; neutral, MIDAS and users' templates), compiled in the
sandbox of judges/sandbox.py, and `braces`, the format of the templates written before it
(`{name}` placeholders filled by a message builder, judges/builders.py), kept so their text,
rendering and hashes do not change.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from judges.sandbox import TemplateSourceError, compile_source, names_used
from rubrics import content_hash
from rubrics.errors import describe_validation_error
from rubrics.models import ID_PATTERN, TEMPLATE_REF_PATTERN

TEMPLATE_DIR = Path(__file__).parent / "templates"
OutputKind = Literal["criteria_json", "first_integer", "rating_json", "scores_json"]
RequestField = Literal["prompt", "reference"]
_REF = re.compile(TEMPLATE_REF_PATTERN)
# The names a jinja2 template may read, besides its constants and metadata choices.
CONTEXT_NAMES = (
    "prompt",
    "reference",
    "answer",
    "criteria",
    "anchors",
    "scale",
    "reply_format",
    "metadata",
)
# Fields added with jinja2 templates. A template that leaves them at these values (every
# template written before them) hashes as it did, so the judgments stored with it and the
# cache keys of its calls keep naming it by the same hash.
_LATER_FIELDS: dict[str, Any] = {
    "syntax": "braces",
    "extends": None,
    "constants": {},
    "ignores": [],
    "anchors_of": None,
    "metadata_choices": {},
}


class TemplateError(ValueError):
    """A template reference or template is wrong; `field` is the request field it is about."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class PromptTemplate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=ID_PATTERN)
    version: int = Field(ge=1)
    output: OutputKind
    syntax: Literal["jinja2", "braces"] = "jinja2"
    system: str | None = None
    user: str | None = None
    user_builder: str | None = Field(default=None, description="braces: the message builder")
    fenced: list[str] = Field(
        default_factory=list, description="braces: the values fenced; jinja2 fences every one"
    )
    extends: str | None = Field(default=None, description="the template this one varies")
    constants: dict[str, str | int | bool] = Field(
        default_factory=dict, description="fixed values the text reads (a variant's switches)"
    )
    ignores: list[RequestField] = Field(
        default_factory=list, description="request fields the judge deliberately never sees"
    )
    anchors_of: str | None = Field(
        default=None,
        description="a bundled rubric whose scale and anchors the text states itself; the "
        "template grades only rubrics with that scale and those anchors",
    )
    metadata_choices: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="NAME: {value: text}: the text for the request's metadata.NAME, which "
        "must be one of the values (MIDAS: language KO -> Korean)",
    )

    @model_validator(mode="after")
    def _consistent(self) -> PromptTemplate:
        for name, texts in self.metadata_choices.items():
            if not texts:
                raise ValueError(f"metadata_choices.{name}: give at least one value")
        if self.syntax == "braces":
            return self
        if self.user_builder is not None or self.fenced:
            raise ValueError(
                "user_builder and fenced belong to braces templates; a jinja2 template fences "
                "every value it is given"
            )
        if not self.user:
            raise ValueError("user: a jinja2 template needs the text of its user message")
        names = [*CONTEXT_NAMES, *self.constants, *self.metadata_choices]
        known = set(names)
        if len(known) < len(names):
            taken = sorted(n for n in known if names.count(n) > 1)[0]
            raise ValueError(f"'{taken}' names two values (constants, metadata_choices, qadi's)")
        for part in ("system", "user"):
            source = getattr(self, part)
            if source is None:
                continue
            try:
                compile_source(source)
            except TemplateSourceError as exc:
                raise ValueError(f"{part}: {exc}") from None
            unknown = sorted(names_used(source) - known)
            if unknown:
                raise ValueError(
                    f"{part}: unknown name '{unknown[0]}' (templates read: "
                    f"{', '.join(sorted(known))})"
                )
        return self

    @property
    def ref(self) -> str:
        return f"{self.id}@{self.version}"

    @cached_property
    def hash(self) -> str:
        data = self.model_dump(mode="json")
        for name, before in _LATER_FIELDS.items():
            if data[name] == before:
                del data[name]
        return content_hash(data)


def check_ref(ref: str, field: str = "template") -> tuple[str, int]:
    """'name@version' split, or TemplateError: a reference is a name, never a path."""
    match = _REF.match(ref) if isinstance(ref, str) else None
    if match is None:
        raise TemplateError(
            f"{field}: '{ref}' is not a template reference (name@version; the name of "
            "letters, digits, '.', '_' and '-')",
            field,
        )
    name, version = ref.rsplit("@", 1)
    return name, int(version)


def _validate(data: Any, source: str) -> PromptTemplate:
    if not isinstance(data, dict):
        raise TemplateError(f"{source}: a template must be an object, got {type(data).__name__}")
    try:
        return PromptTemplate.model_validate(data)
    except ValidationError as exc:
        problems = describe_validation_error(exc).removeprefix("body: ")  # a whole-template check
        raise TemplateError(f"{source}: {problems}") from None


def read_template_file(path: Path) -> Any:
    """A template file's object (YAML or JSON), checked when a registry resolves it."""
    data = _read(Path(path))
    if not isinstance(data, dict):
        raise TemplateError(f"{path}: a template must be an object, got {type(data).__name__}")
    return data


def _read(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TemplateError(f"{path}: cannot read template file ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise TemplateError(f"{path}: not valid YAML/JSON: {exc}") from None


def _bundled_refs() -> list[str]:
    return sorted(
        p.name.removesuffix(".yaml").replace(".v", "@") for p in TEMPLATE_DIR.glob("*.yaml")
    )


@cache
def load_template(ref: str) -> PromptTemplate:
    """A bundled template by 'name@version'."""
    name, version = check_ref(ref)
    path = TEMPLATE_DIR / f"{name}.v{version}.yaml"
    if not path.is_file():
        raise TemplateError(
            f"template: no template '{ref}' (bundled: {', '.join(_bundled_refs())})", "template"
        )
    data = _read(path)
    template = _validate(_extended(data, str(path), load_template), str(path))
    if template.ref != ref:
        raise TemplateError(f"{path}: declares {template.ref}, file name says {ref}")
    return template


def _extended(data: Any, source: str, lookup) -> Any:
    """`data` on top of the template it `extends` (id, version and extends are its own)."""
    if not isinstance(data, dict) or data.get("extends") is None:
        return data
    base = lookup(str(data["extends"]))
    inherited = base.model_dump(exclude={"id", "version", "extends"}, exclude_defaults=True)
    return {**inherited, **data}


def is_bundled(ref: str) -> bool:
    name, _, version = ref.rpartition("@")
    return (TEMPLATE_DIR / f"{name}.v{version}.yaml").is_file()


class TemplateRegistry:
    """The templates one grader can name: the bundled ones, the user's files (the judges
    config's `qadi.templates`), and objects given inline (by a rubric or a request).

    A user template never takes a bundled template's name@version, and two files never give
    one name@version two texts. Inline templates are not registered: two requests may send
    different texts under one name@version, and their judgments tell them apart by hash.
    The parsed inline ones are kept by content hash, the `INLINE_KEPT` most recently used
    only: every request may send a new text, and a service lives long.
    """

    INLINE_KEPT = 256

    def __init__(self, paths: Iterable[Path] = ()) -> None:
        self.user: dict[str, PromptTemplate] = {}
        self._inline: OrderedDict[str, PromptTemplate] = OrderedDict()
        for path in _template_files(paths):
            self.add(_read(path), str(path))

    def add(self, data: Any, source: str) -> PromptTemplate:
        template = self.parse(data, source)
        self.user[template.ref] = template
        return template

    def parse(self, data: Any, source: str) -> PromptTemplate:
        """A user's template object, validated; refused with the reason in one line."""
        if isinstance(data, dict) and data.get("extends") is not None:
            check_ref(str(data["extends"]), f"{source}: extends")
        template = _validate(_extended(data, source, self.get), source)
        if template.syntax != "jinja2":
            raise TemplateError(f"{source}: syntax: your templates are jinja2")
        if template.output == "first_integer":
            raise TemplateError(
                f"{source}: output: first_integer is a paper's parsing rule, kept for "
                "reproducing it; use rating_json, scores_json or criteria_json"
            )
        if is_bundled(template.ref):
            raise TemplateError(
                f"{source}: id: {template.ref} is a bundled template; give yours another id"
            )
        known = self.user.get(template.ref)
        if known is not None and known.hash != template.hash:
            raise TemplateError(
                f"{source}: {template.ref} already names another template text "
                f"({known.hash}); raise its version"
            )
        return template

    def get(self, ref: str, field: str = "template") -> PromptTemplate:
        check_ref(ref, field)
        if ref in self.user:
            return self.user[ref]
        try:
            return load_template(ref)
        except TemplateError:
            known = ", ".join([*_bundled_refs(), *sorted(self.user)])
            raise TemplateError(f"{field}: no template '{ref}' (known: {known})", field) from None

    def resolve(self, spec: str | Mapping[str, Any], field: str = "template") -> PromptTemplate:
        """A template from a reference or an inline object (parsed once per content)."""
        if isinstance(spec, str):
            return self.get(spec, field)
        key = content_hash(dict(spec))
        if key in self._inline:
            self._inline.move_to_end(key)
            return self._inline[key]
        try:
            template = self.parse(dict(spec), field)
        except TemplateError as exc:
            raise TemplateError(str(exc), field) from None
        self._inline[key] = template
        if len(self._inline) > self.INLINE_KEPT:
            self._inline.popitem(last=False)
        return template


def _template_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        path = Path(path)
        if path.is_dir():
            files += sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
        else:
            files.append(path)
    return files


BUNDLED = TemplateRegistry()


def render(text: str, values: dict[str, str]) -> str:
    """A braces template: substitute `{name}` for each given value in one pass.

    One pass matters: a value that itself contains `{criteria}` must stay literal text.
    Other braces (JSON examples in the prompt) are left alone.
    """
    if not values:
        return text
    pattern = re.compile(r"\{(" + "|".join(re.escape(k) for k in values) + r")\}")
    return pattern.sub(lambda m: values[m.group(1)], text)
