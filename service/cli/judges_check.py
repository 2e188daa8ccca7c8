"""`qadi judges check`: real calls to each configured judge: reachable, which structured-output
mode its server takes, whether it returns token probabilities, and latency."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from service.cli.app import app, console, fail, out

judges_app = typer.Typer(help="Configured judges.", no_args_is_help=True)
app.add_typer(judges_app, name="judges")

PROBE_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "probe",
        "strict": True,
        "schema": {
            "type": "object",
            "additionalProperties": False,
            "required": ["ok"],
            "properties": {"ok": {"type": "boolean", "enum": [True]}},
        },
    },
}
PROBE = [{"role": "user", "content": 'Reply with the JSON object {"ok": true} and nothing else.'}]
MODES = ("json_schema", "json_object", "none")


@dataclass
class Probe:
    """What the calls to one judge found."""

    first: Any  # the call in the configured mode (a CallOutcome)
    working: str | None = None  # the first mode whose reply parsed, configured mode first
    warm: Any = None  # a second call in that mode, timed
    detail: str = ""


@judges_app.command("check")
def check(
    config: Path | None = typer.Option(None, help="judges YAML (default $QADI_JUDGES_CONFIG)"),
) -> None:
    """Call each judge with a tiny structured-output request in its configured mode
    (`structured_output:`, default json_schema); when its server refuses that mode or the
    reply does not parse, try json_schema, json_object and none in turn and say which line
    to write in the judges file. Report reachable, structured output, token probabilities
    (`logprobs`: returned when asked) and latency. Exit 1 when a judge is unreachable or no
    mode works for its configured one.

    The first call to a provider pays LiteLLM's and the SDK's start-up (about a second for
    `openai/`) and the connection set-up, so latency is measured on a second call to each
    reachable judge, made one at a time: the call itself, as grading will see it."""
    from judges import JudgeConfigError, load_config
    from judges.client import JudgeClient

    try:
        client = JudgeClient(load_config(config))
    except JudgeConfigError as exc:
        fail(str(exc))
    names = client.config.names
    probes = asyncio.run(_probe_all(client, names))
    table = Table(
        "judge",
        "model",
        "maker",
        "reachable",
        "structured output",
        "latency ms",
        "logprobs",
        "detail",
    )
    failures, advice = 0, []
    for name in names:
        probe, entry = probes[name], client.config.judge(name)
        reachable = probe.first.status == "ok" or probe.first.refused
        configured = entry.output_mode
        ok_as_configured = probe.working == configured
        failures += not reachable or (probe.working is not None and not ok_as_configured)
        if probe.working is not None and not ok_as_configured:
            why = (
                f"its server does not take `{configured}`"
                if probe.first.refused
                else f"in `{configured}` mode its reply was not the requested JSON"
            )
            advice.append(
                f"judge '{name}': {why}; write `structured_output: {probe.working}` under it "
                "in the judges file"
            )
        table.add_row(
            name,
            entry.model,
            client.config.maker_of_judge(entry) or "unknown",
            "yes" if reachable else ("not called" if probe.first.attempts == 0 else "no"),
            _structured_cell(reachable, ok_as_configured, probe.working),
            f"{probe.warm.latency_ms:.0f}" if probe.warm is not None else "–",
            _logprobs_cell(entry.top_logprobs, probe),
            probe.detail,
        )
    out.print(table)
    for line in advice:
        out.print(line, highlight=False)
    _warn_unknown_makers(client.config)
    if failures:
        raise typer.Exit(1)


async def _probe_all(client, names: list[str]) -> dict[str, Probe]:
    """Every judge at once for the first calls; the timed calls one at a time."""
    found = await asyncio.gather(*(_modes(client, n) for n in names))
    probes = dict(zip(names, found, strict=True))
    for name, probe in probes.items():
        if probe.working is not None:
            probe.warm = await _call(client, name, probe.working)
    return probes


async def _modes(client, name: str) -> Probe:
    """The configured mode first; the others only when it fails on a reachable server."""
    configured = client.config.judge(name).output_mode
    first = await _call(client, name, configured)
    probe = Probe(first=first, detail=first.error or "")
    if _is_probe_reply(first):
        probe.working = configured
        return probe
    if first.status != "ok" and not first.refused:
        return probe  # unreachable: other modes cannot tell more
    for mode in (m for m in MODES if m != configured):
        if _is_probe_reply(await _call(client, name, mode)):
            probe.working = mode
            break
    return probe


async def _call(client, name: str, mode: str):
    from judges.prompts import JudgeCall, for_mode

    call = for_mode(JudgeCall(messages=PROBE, response_format=PROBE_SCHEMA), mode)
    return await client.complete(name, call.messages, call.response_format)


def _is_probe_reply(outcome) -> bool:
    if outcome.status != "ok":
        return False
    from judges.verdicts import ParseFailure, json_object

    try:
        return json_object(outcome.text or "") == {"ok": True}
    except ParseFailure:
        return False


def _warn_unknown_makers(config) -> None:
    """At guard level provider, a judge whose maker is unknown is refused every grade: say
    so now, with the fix, rather than at the first grade."""
    from judges.guard import unknown_judge_maker

    if config.qadi.guard != "provider":
        return
    for name in config.names:
        entry = config.judge(name)
        if config.maker_of_judge(entry) is None:
            console.print(
                f"[bold yellow]warning:[/] {unknown_judge_maker(name, entry.model)}; "
                "until then the guard refuses every grade this judge is asked for",
                highlight=False,
                soft_wrap=True,
            )


def _structured_cell(reachable: bool, as_configured: bool, working: str | None) -> str:
    if not reachable:
        return "–"
    if as_configured:
        return "yes"
    return f"no ({working} works)" if working else "no"


def _logprobs_cell(top_logprobs: int | None, probe: Probe) -> str:
    """`yes` when asked for and returned, `no` when asked for and missing, `off` unasked."""
    if not top_logprobs:
        return "off"
    if probe.first.status != "ok":
        return "–"
    from judges.logprobs import tokens_of

    return "yes" if tokens_of(probe.first.payload) is not None else "no"
