"""The Jinja2 environment every `syntax: jinja2` prompt template is compiled in.

Templates can come from users (inline in a request, or a file), so the environment is
sandboxed (no Python internals, no file access: there is no loader) and a template is
straight-line text: placeholders, `if`, `set` and a few filters. Loops, macros, calls,
includes and imports are refused when the template is read, so each of its nodes runs at
most once; the nodes are capped, lists and dicts may hold only constants, and every
operation that makes or scans a value is metered (judges/template_budget.py), so a render
costs a bounded amount of work whatever a template author writes. The values a template
receives are already fenced (judges/fencing.py); a template cannot take text apart (no
slicing, no indexing, no string methods), so it cannot cut a value out of its fence either.
"""

from __future__ import annotations

import operator
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from judges import template_budget as budget
from judges.template_budget import MAX_NODES, MAX_OUTPUT_CHARS

READABLE = ("metadata", "scale")  # the only values whose attributes a template reads
# Filters that format whole values; none of them can cut a fenced value apart.
FILTERS = ("default", "join", "length", "lower", "upper", "trim", "indent", "int", "round")
# Tests that look at a value's kind, never scan it.
TESTS = ("defined", "undefined", "none", "number", "string", "boolean", "true", "false")
TESTS += ("odd", "even")
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


class _MeteredCode(CodeGenerator):
    """Jinja's code generator with `~` and comparisons routed through the meter, as the
    sandbox already routes binary operators (`intercepted_binops`)."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.concat((")
        for argument in node.nodes:
            self.visit(argument, frame)
            self.write(", ")
        self.write("))")

    def visit_Compare(self, node: nodes.Compare, frame: Frame) -> None:
        self.write("environment.compare(")
        self.visit(node.expr, frame)
        self.write(", (")
        for operand in node.ops:
            self.write(f"({operand.op!r}, ")
            self.visit(operand.expr, frame)
            self.write("), ")
        self.write("))")


class _Sandbox(ImmutableSandboxedEnvironment):
    code_generator_class = _MeteredCode
    intercepted_binops = budget.BINARY

    def call_binop(self, context: Any, op: str, left: Any, right: Any) -> Any:
        return budget.binary(op, left, right, self.binop_table[op])

    @staticmethod
    def concat(values: tuple) -> str:
        return budget.concat(values)

    @staticmethod
    def compare(left: Any, operations: tuple) -> bool:
        return budget.compare(left, operations)

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
        finalize=budget.output,
        # no constant folding at compile time: every operation runs, metered, at render
        optimized=False,
    )
    env.filters = {name: budget.metered_filter(name, env.filters[name]) for name in FILTERS}
    env.tests = {name: env.tests[name] for name in TESTS}
    env.globals = {}
    env.binop_table = {**env.binop_table, "*": operator.mul, "**": operator.pow}
    return env


ENV = _environment()


@lru_cache(maxsize=512)  # inline templates are many: keep the most recently used
def compile_source(source: str) -> Any:
    """The compiled template, or TemplateSourceError naming what is wrong with it."""
    try:
        tree = ENV.parse(source)
    except TemplateSyntaxError as exc:
        raise TemplateSourceError(f"line {exc.lineno}: {exc.message}") from None
    except (RecursionError, ValueError) as exc:  # ValueError: an integer of > 4300 digits
        what = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise TemplateSourceError(what) from None
    count = sum(1 for _ in tree.find_all(nodes.Node))
    if count > MAX_NODES:
        raise TemplateSourceError(
            f"the template has {count:,} syntax elements; the limit is {MAX_NODES:,}"
        )
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
    for node in tree.find_all(nodes.Test):
        if node.name not in TESTS:
            raise TemplateSourceError(
                f"line {node.lineno}: test '{node.name}' is not allowed "
                f"(allowed: {', '.join(TESTS)})"
            )
    _check_literals(tree)
    try:
        return ENV.from_string(tree)
    except TemplateSyntaxError as exc:  # a filter or test name the parser let through
        raise TemplateSourceError(f"line {exc.lineno}: {exc.message}") from None


def _check_literals(tree: nodes.Template) -> None:
    """Lists, tuples and dicts written in a template hold constants only: a list holding a
    list (`{% set a = [a, a] %}` repeated) is a structure whose text doubles at every step
    though each step costs nothing, which no meter of single operations would see."""
    for node in tree.find_all((nodes.List, nodes.Tuple, nodes.Dict)):
        if isinstance(node, nodes.Tuple) and node.ctx == "store":
            continue  # `{% set a, b = ... %}` names, not a value
        items = node.items
        values = [v for item in items for v in ((item.key, item.value)
                  if isinstance(item, nodes.Pair) else (item,))]  # fmt: skip
        if not all(isinstance(v, nodes.Const) for v in values):
            raise TemplateSourceError(
                f"line {node.lineno}: lists and dicts in a template may hold only constants"
            )


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
    """Render `source` with `context` within the template budget; MissingValue names an
    absent value the text needs, TemplateLimit the limit a render went over."""
    template = compile_source(source)
    text = budget.metered(lambda: template.render(context))
    if len(text) > MAX_OUTPUT_CHARS:
        raise SecurityError(f"the rendered prompt is longer than {MAX_OUTPUT_CHARS} characters")
    return text


def is_missing(value: Any) -> bool:
    return isinstance(value, Undefined)
