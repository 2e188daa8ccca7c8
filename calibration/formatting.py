"""Numbers and one-line texts as reports print them: rounded, never a Python repr.

Light on purpose (no numpy): the CLI imports it to print drift lines.
"""

from __future__ import annotations

from typing import Any

STAND_IN = "STAND-IN"  # the badge of a judge with no model behind it (judges/standins.py)


def judge_label(name: str, stand_in: bool | None) -> str:
    """A judge's name as terminal tables print it: a stand-in's carries the badge."""
    return f"{name} ({STAND_IN})" if stand_in else name


def fmt(value: Any, digits: int = 3) -> str:
    """A number rounded for reading; integers and large whole numbers without decimals."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or float(value).is_integer() and abs(value) > 10:
        return f"{value:g}"
    return f"{value:.{digits}f}"


def interval(ci: list[float] | None, digits: int = 3) -> str:
    return "" if not ci else f"[{fmt(ci[0], digits)}, {fmt(ci[1], digits)}]"


def with_interval(value: Any, ci: list[float] | None, digits: int = 3) -> str:
    text = fmt(value, digits)
    return f"{text} {interval(ci, digits)}" if ci else text


def drift_line(change: dict[str, Any]) -> str:
    """'gpt-judge · MAD · overall: 16.7 [12.1, 21.0], was 2.1 [0.0, 5.3] (p 0.0001, q 0.0012)'."""
    names = {"mad": "MAD", "signed_error": "signed error", "exact_match": "exact match"}
    metric = names.get(change["metric"], change["metric"])
    now = with_interval(change["value"], change.get("ci"))
    before = with_interval(change["previous"], change["previous_ci"])
    line = f"{change['judge']} · {metric} · {change.get('stratum', 'overall')}: {now}, was {before}"
    if change.get("q_value") is not None:
        line += f" (p {p_value(change['p_value'])}, q {p_value(change['q_value'])})"
    return line


def p_value(value: float | None) -> str:
    """A p- or q-value: 4 decimals, '< 0.0001' below that."""
    if value is None:
        return "—"
    return "< 0.0001" if value < 0.0001 else f"{value:.4f}"


# inputs kept for machines: which versions graded the items (selective judging's bindings;
# `judge_models` already says it for a reader)
_NOT_SHOWN = {"judge_versions"}


def input_lines(inputs: dict[str, Any]) -> list[str]:
    """The report's inputs as 'name: value' lines, nested values spelled out."""
    lines = []
    for key, value in inputs.items():
        if value in (None, [], {}, "") or key in _NOT_SHOWN:
            continue
        lines.append(f"{key.replace('_', ' ')}: {spelled(value)}")
    return lines


def spelled(value: Any) -> str:
    """A nested input value as words: judge models, windows, counts, ISO times."""
    if isinstance(value, dict):
        if set(value) >= {"judge", "model"}:
            template = value.get("template")
            digest = str(value.get("template_hash") or "")[:19]
            extra = f" (template {template}, {digest})" if template else ""
            return f"{value['judge']} = {value['model']}{extra}"
        if set(value) == {"since", "until"}:
            return f"{spelled(value['since'] or 'start')} → {spelled(value['until'] or 'now')}"
        return ", ".join(f"{k} {spelled(v)}" for k, v in value.items() if v not in (None, ""))
    if isinstance(value, list):
        return "; ".join(spelled(v) for v in value)
    if isinstance(value, float):
        return fmt(value)
    if isinstance(value, str) and len(value) >= 19 and value[10:11] == "T":
        return value[:16].replace("T", " ")  # an ISO time, to the minute
    return str(value)
