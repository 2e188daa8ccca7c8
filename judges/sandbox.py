"""The Jinja2 environment every `syntax: jinja2` prompt template is compiled in.

Templates can come from users (inline in a request, or a file), so the environment is
sandboxed (no Python internals, no file access: there is no loader) and a template is
straight-line text: placeholders, `if`, `set` and a few filters. Loops, macros, calls,
includes and imports are refused when the template is read, so rendering time is linear in
the template's size whatever a template author writes. The values a template receives are
already fenced (judges/fencing.py); a template cannot take text apart (no slicing, no
indexing, no string methods), so it cannot cut a value out of its fence either.
"""

from __future__ import annotations

import operator
from functools import cache
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, nodes
from jinja2.runtime import Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

MAX_OUTPUT_CHARS = 2_000_000
READABLE = ("metadata", "scale")  # the only values whose attributes a template reads
# Filters that format whole values; none of them can cut a fenced value apart.
FILTERS = ("default", "join", "length", "lower", "upper", "trim", "indent", "int", "round")
_FORBIDDEN = {
    nodes.For: "'for' loops",
    nodes.Macro: "macros",
    nodes.CallBlock: "'call' blocks",
    nodes.Call: "function or method calls",
    nodes.Include: "'include'",
    nodes.Import: "'import'",
    nodes.FromImport: "'import'",
    nodes.Extends: "'extends'",
    nodes.Block: "blocks",
    nodes.FilterBlock: "'filter' blocks",
    nodes.Slice: "slices",
    nodes.With: "'with' blocks",
    nodes.Scope: "scopes",
    nodes.EvalContextModifier: "'autoescape'",
}


class TemplateSourceError(ValueError):
    """The template text cannot be compiled or uses something the sandbox refuses."""


class MissingValue(Exception):
    """The template needs a value the request does not carry; `name` is its field path."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class _Missing(StrictUndefined):
    """Any use of an absent value names it: `reference`, or `metadata.idiom`."""

    __slots__ = ()

    def _fail_with_undefined_error(self, *args: Any, **kwargs: Any) -> Any:
        name = str(self._undefined_name)
        if isinstance(self._undefined_obj, Metadata):
            name = f"metadata.{name}"
        raise MissingValue(name)

    __iter__ = __str__ = __len__ = __eq__ = __ne__ = __bool__ = _fail_with_undefined_error
    __hash__ = __contains__ = _fail_with_undefined_error  # type: ignore[assignment]


class Metadata(dict):
    """The request metadata a template reads (`metadata.KEY`); a missing key is named."""


class _Sandbox(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, op: str, left: Any, right: Any) -> Any:
        if op == "*" and (isinstance(left, str | list) or isinstance(right, str | list)):
            raise SecurityError("templates cannot repeat text with '*'")
        if op == "**" and isinstance(right, int | float) and abs(right) > 64:
            raise SecurityError("exponent too large")
        return super().call_binop(context, op, left, right)

    def getitem(self, obj: Any, argument: Any) -> Any:
        if isinstance(obj, str):
            raise SecurityError("templates cannot take text apart")
        return super().getitem(obj, argument)

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, str):
            raise SecurityError("templates cannot call string methods")
        return super().getattr(obj, attribute)


def _environment() -> _Sandbox:
    env = _Sandbox(
        undefined=_Missing,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.filters = {name: env.filters[name] for name in FILTERS}
    env.globals = {}
    env.binop_table = {**env.binop_table, "*": operator.mul, "**": operator.pow}
    return env


ENV = _environment()


@cache
def compile_source(source: str) -> Any:
    """The compiled template, or TemplateSourceError naming what is wrong with it."""
    try:
        tree = ENV.parse(source)
    except TemplateSyntaxError as exc:
        raise TemplateSourceError(f"line {exc.lineno}: {exc.message}") from None
    except RecursionError:
        raise TemplateSourceError("nested too deeply") from None
    for kind, what in _FORBIDDEN.items():
        found = next(tree.find_all(kind), None)
        if found is not None:
            raise TemplateSourceError(f"line {found.lineno}: templates may not use {what}")
    for node in [*tree.find_all(nodes.Getattr), *tree.find_all(nodes.Getitem)]:
        if not (isinstance(node.node, nodes.Name) and node.node.name in READABLE):
            raise TemplateSourceError(
                f"line {node.lineno}: templates may only read attributes of "
                f"{' and '.join(READABLE)} (e.g. metadata.idiom)"
            )
    for node in tree.find_all(nodes.Filter):
        if node.name not in FILTERS:
            raise TemplateSourceError(
                f"line {node.lineno}: filter '{node.name}' is not allowed "
                f"(allowed: {', '.join(FILTERS)})"
            )
    return ENV.from_string(tree)


def names_used(source: str) -> set[str]:
    """Every top-level name the template reads (for checking against the known ones)."""
    from jinja2 import meta

    return set(meta.find_undeclared_variables(ENV.parse(source)))


def metadata_keys(source: str) -> set[str]:
    """The keys a template reads as `metadata.KEY` or `metadata["KEY"]`."""
    keys = set()
    tree = ENV.parse(source)
    for node in tree.find_all(nodes.Getattr):
        if isinstance(node.node, nodes.Name) and node.node.name == "metadata":
            keys.add(node.attr)
    for node in tree.find_all(nodes.Getitem):
        if (
            isinstance(node.node, nodes.Name)
            and node.node.name == "metadata"
            and isinstance(node.arg, nodes.Const)
        ):
            keys.add(str(node.arg.value))
    return keys


def render(source: str, context: dict[str, Any]) -> str:
    """Render `source` with `context`; MissingValue names an absent value the text needs."""
    text = compile_source(source).render(context)
    if len(text) > MAX_OUTPUT_CHARS:
        raise SecurityError(f"the rendered prompt is longer than {MAX_OUTPUT_CHARS} characters")
    return text


def is_missing(value: Any) -> bool:
    return isinstance(value, Undefined)
