"""What a prompt template may compute while it renders, and the meter that holds it to that.

A template comes from whoever sends a request (judges/sandbox.py), and the sandbox alone
bounds what it may *touch*, not what it may *compute*: before this meter, four nested
`**` built a number of 10^(64^4) digits in 13 s of CPU on one thread (CPython holds the GIL
for one big-integer operation, so a render off the event loop still froze the worker), and
`{% set a = a ~ a %}` repeated doubles a text without bound. A template has no loops, so each
of its nodes runs at most once; the sandbox caps the nodes, and here every operation that
makes or scans a value is charged for the characters (or list items, or number bits) it
touches, checked against a per-value size and a per-render total before the work is done
where the work itself is the danger (`**`, `*`, `indent`, `round`). Rendering therefore
costs at most MAX_WORK units of work whatever the template says: a fraction of a second.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import Any

from jinja2.sandbox import SecurityError

MAX_OUTPUT_CHARS = 2_000_000  # the rendered prompt
MAX_NODES = 2_000  # a template's syntax nodes (the bundled ones have 2-23 per message)
MAX_NUMBER_BITS = 256  # a number a template computes: |n| < 2**256, about 77 digits
MAX_VALUE_CHARS = MAX_OUTPUT_CHARS  # a text (or list) a template builds
MAX_WORK = 20_000_000  # characters, items and bits made or scanned over one render
MAX_PRECISION = 20  # `round`'s digits: 10**precision is computed
MAX_INDENT = 1_000  # `indent`'s width, in spaces or characters


class TemplateLimit(SecurityError):
    """A render went over one of the limits above; the message names it."""


class Meter:
    """The work one render has done so far."""

    __slots__ = ("work",)

    def __init__(self) -> None:
        self.work = 0

    def spend(self, units: int) -> None:
        self.work += units
        if self.work > MAX_WORK:
            raise TemplateLimit(
                f"the template computes too much (over {MAX_WORK:,} characters made or "
                "scanned in one render)"
            )

    def made(self, value: Any) -> Any:
        """`value`, charged and checked: a number within MAX_NUMBER_BITS, a text or list
        within MAX_VALUE_CHARS."""
        self.spend(size(value))
        check_value(value)
        return value


_CURRENT: ContextVar[Meter | None] = ContextVar("qadi_template_meter", default=None)


def current() -> Meter:
    """The meter of the render under way; a fresh one outside any (each call on its own)."""
    return _CURRENT.get() or Meter()


def metered(render: Callable[[], str]) -> str:
    """Run `render` under a meter of its own (renders on other threads have theirs)."""
    token = _CURRENT.set(Meter())
    try:
        return render()
    finally:
        _CURRENT.reset(token)


def size(value: Any) -> int:
    """Work units a value stands for: its characters, items or bits (1 at least)."""
    if isinstance(value, str | list | tuple | dict):
        return max(1, len(value))
    if isinstance(value, int):
        return max(1, value.bit_length() // 8)
    return 1


def check_value(value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > MAX_NUMBER_BITS:
            raise _number_too_big()
    elif isinstance(value, str | list | tuple | dict) and len(value) > MAX_VALUE_CHARS:
        raise _value_too_long()


def _number_too_big() -> TemplateLimit:
    return TemplateLimit(
        f"a number the template computes is over {MAX_NUMBER_BITS} bits "
        f"(the limit is 2**{MAX_NUMBER_BITS})"
    )


def _value_too_long() -> TemplateLimit:
    return TemplateLimit(
        f"a value the template builds is over {MAX_VALUE_CHARS:,} characters or items"
    )


# --- operators -----------------------------------------------------------------------------


def _bits(value: Any) -> int:
    return value.bit_length() if isinstance(value, int) else 0


def _before_power(base: Any, exponent: Any) -> None:
    """Refuse an integer power whose result would be over the bound, before computing it."""
    integers = isinstance(base, int) and isinstance(exponent, int)
    if integers and exponent > 0 and (_bits(abs(base)) - 1) * exponent > MAX_NUMBER_BITS:
        raise _number_too_big()


def _before_product(left: Any, right: Any) -> None:
    if isinstance(left, str | list | tuple) or isinstance(right, str | list | tuple):
        raise SecurityError("templates cannot repeat text with '*'")
    if _bits(left) + _bits(right) > MAX_NUMBER_BITS + 1:
        raise _number_too_big()


def _before_modulo(left: Any, right: Any) -> None:
    if isinstance(left, str):
        raise SecurityError("templates cannot format text with '%'")


_BEFORE: dict[str, Callable[[Any, Any], None]] = {
    "**": _before_power,
    "*": _before_product,
    "%": _before_modulo,
}
BINARY = frozenset({"+", "-", "*", "/", "//", "%", "**"})


def binary(op: str, left: Any, right: Any, compute: Callable[[Any, Any], Any]) -> Any:
    """`left op right` through `compute` (the environment's operator), within the limits."""
    check = _BEFORE.get(op)
    if check is not None:
        check(left, right)
    return current().made(compute(left, right))


_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "gt": operator.gt,
    "gteq": operator.ge,
    "lt": operator.lt,
    "lteq": operator.le,
    "in": lambda a, b: a in b,
    "notin": lambda a, b: a not in b,
}


def compare(left: Any, operations: Iterable[tuple[str, Any]]) -> bool:
    """A chained comparison (`a < b < c`, `x in y`), each step charged for the values it
    scans: without a charge, one 2 MB text compared or searched at every node of a template
    would cost seconds though no value grows."""
    meter = current()
    for op, right in operations:
        meter.spend(size(left) + size(right))
        if not _COMPARE[op](left, right):
            return False
        left = right
    return True


def concat(values: Iterable[Any]) -> str:
    """`a ~ b ~ c`: the texts joined, charged, and refused before joining past the limit."""
    texts = [str(v) for v in values]
    total = sum(len(t) for t in texts)
    meter = current()
    meter.spend(total)
    if total > MAX_VALUE_CHARS:
        raise _value_too_long()
    return "".join(texts)


def output(value: Any) -> str:
    """A `{{ value }}` as text, charged for its length."""
    text = value if isinstance(value, str) else str(value)
    current().spend(len(text))
    return text


# --- filters -------------------------------------------------------------------------------


def _argument(args: tuple, kwargs: dict, position: int, name: str, default: Any) -> Any:
    if len(args) > position:
        return args[position]
    return kwargs.get(name, default)


def _before_indent(args: tuple, kwargs: dict) -> None:
    width = _argument(args, kwargs, 1, "width", 4)
    wide = len(width) if isinstance(width, str) else width
    if isinstance(wide, int) and wide > MAX_INDENT:
        raise TemplateLimit(f"indent: the width is over {MAX_INDENT}")
    text = args[0] if args else ""
    lines = text.count("\n") + 1 if isinstance(text, str) else 1
    if isinstance(wide, int) and len(str(text)) + lines * wide > MAX_VALUE_CHARS:
        raise _value_too_long()


def _before_join(args: tuple, kwargs: dict) -> None:
    # sync_do_join(eval_ctx, value, d): the separator repeats once per item
    items = args[1] if len(args) > 1 else ()
    separator = _argument(args, kwargs, 2, "d", "")
    count = len(items) if hasattr(items, "__len__") else 0
    if len(str(separator)) * count > MAX_VALUE_CHARS:
        raise _value_too_long()


def _before_round(args: tuple, kwargs: dict) -> None:
    precision = _argument(args, kwargs, 1, "precision", 0)
    if isinstance(precision, int) and abs(precision) > MAX_PRECISION:
        raise TemplateLimit(f"round: the precision is over {MAX_PRECISION} digits")


_BEFORE_FILTER: dict[str, Callable[[tuple, dict], None]] = {
    "indent": _before_indent,
    "join": _before_join,
    "round": _before_round,
}


def metered_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` (a Jinja filter) checked before it runs where its arguments set its cost,
    and its result charged; Jinja's pass-context marker is kept so it is called as before."""
    check = _BEFORE_FILTER.get(name)

    def filtered(*args: Any, **kwargs: Any) -> Any:
        if check is not None:
            check(args, kwargs)
        return current().made(function(*args, **kwargs))

    if hasattr(function, "jinja_pass_arg"):
        filtered.jinja_pass_arg = function.jinja_pass_arg  # type: ignore[attr-defined]
    filtered.__name__ = f"metered_{name}"
    return filtered
