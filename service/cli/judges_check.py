"""`qadi judges check`: real calls to each configured judge: reachable, which structured-output
mode its server takes, whether it returns token probabilities, and latency."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
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


@dataclass
class Probe:
    """What the calls to one judge found."""

    first: Any  # the call in the configured mode (a CallOutcome)
    working: str | None = None  # the first mode whose reply parsed, configured mode first
    logprobs_refused: bool = False  # a mode works only with token probabilities unasked
    warm: Any = None  # a second call in that mode, timed
    failed: dict[str, str] = field(default_factory=dict)  # mode -> why, when none works
    refusals: list[str] = field(default_factory=list)  # the server's words, mode by mode

    @property
    def reachable(self) -> bool:
        return self.first.status == "ok" or self.first.refused

    @property
    def detail(self) -> str:
        """The first call's failure: a refusal in the server's own words (the fix is the
        check's advice, not the one the single call guessed)."""
        return self.first.server_said or self.first.error or ""


@judges_app.command("check")
def check(
    config: Path | None = typer.Option(None, help="judges YAML (default $QADI_JUDGES_CONFIG)"),
) -> None:
    """Call each judge with a tiny structured-output request in its configured mode
    (`structured_output:`, default json_schema); when its server refuses that mode or the
    reply does not parse, try json_schema, json_object and none in turn, and when every mode
    fails on a judge asking for token probabilities, try them again without (a server may
    refuse `logprobs` rather than the format). Say which lines to write in the judges file.
    Report reachable, structured output, token probabilities (`logprobs`: returned when
    asked) and latency. Exit 1 when a judge is unreachable, when no mode works, or when
    what works is not what the judges file says.

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
    advice: list[str] = []
    failures = 0
    for name in names:
        probe, entry = probes[name], client.config.judge(name)
        lines = _advice(name, entry.output_mode, probe)
        advice += lines
        failures += not probe.reachable or bool(lines)
        table.add_row(
            name,
            entry.model,
            client.config.maker_of_judge(entry) or "unknown",
            "yes" if probe.reachable else ("not called" if probe.first.attempts == 0 else "no"),
            _structured_cell(probe, entry.output_mode),
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


def _advice(name: str, configured: str, probe: Probe) -> list[str]:
    """The lines to write in the judges file for one reachable judge (none when it works
    as configured)."""
    if not probe.reachable:
        return []
    if probe.working is None:
        why = "; ".join(f"{mode}: {reason}" for mode, reason in probe.failed.items())
        return [
            f"judge '{name}': no structured-output mode worked, with or without token "
            f"probabilities ({why}); check its model, api_base and parameters"
        ]
    lines = []
    if probe.logprobs_refused:
        from judges.client import refusal_fix

        # the server's words about logprobs, when it named them (vLLM names its maximum)
        said = next((m for m in probe.refusals if "logprob" in m.lower()), "logprobs")
        fix = refusal_fix(said, {"logprobs": True}).format(judge=name)
        lines.append(f"judge '{name}': its server refuses the token probabilities asked for; {fix}")
    if probe.working != configured:
        why = (
            f"its server does not take `{configured}`"
            if probe.first.refused
            else f"in `{configured}` mode its reply was not the requested JSON"
        )
        lines.append(
            f"judge '{name}': {why}; write `structured_output: {probe.working}` under it "
            "in the judges file"
        )
    return lines


async def _probe_all(client, names: list[str]) -> dict[str, Probe]:
    """Every judge at once for the first calls; the timed calls one at a time."""
    found = await asyncio.gather(*(_modes(client, n) for n in names))
    probes = dict(zip(names, found, strict=True))
    for name, probe in probes.items():
        if probe.working is not None:
            probe.warm = await _call(
                client, name, probe.working, logprobs=not probe.logprobs_refused
            )
    return probes


async def _modes(client, name: str) -> Probe:
    """The configured mode first; the others only when it fails on a reachable server;
    then, when none works and a server refused a call that asked for token probabilities,
    every mode again without them."""
    from judges.config import MODES

    entry = client.config.judge(name)
    configured = entry.output_mode
    first = await _call(client, name, configured)
    probe = Probe(first=first)
    if _is_probe_reply(first):
        probe.working = configured
        return probe
    if not probe.reachable:
        return probe  # unreachable: other modes cannot tell more
    order = [configured, *(m for m in MODES if m != configured)]
    outcomes = {configured: first}
    for mode in order[1:]:
        outcomes[mode] = await _call(client, name, mode)
        if _is_probe_reply(outcomes[mode]):
            probe.working = mode
            return probe
    probe.refusals = [o.server_said for o in outcomes.values() if o.refused]
    if entry.top_logprobs and probe.refusals:
        for mode in order:
            if _is_probe_reply(await _call(client, name, mode, logprobs=False)):
                probe.working, probe.logprobs_refused = mode, True
                return probe
    probe.failed = {mode: _why(outcome) for mode, outcome in outcomes.items()}
    return probe


async def _call(client, name: str, mode: str, logprobs: bool = True):
    from judges.prompts import JudgeCall, for_mode

    call = for_mode(JudgeCall(messages=PROBE, response_format=PROBE_SCHEMA), mode)
    return await client.complete(name, call.messages, call.response_format, logprobs=logprobs)


def _is_probe_reply(outcome) -> bool:
    if outcome.status != "ok":
        return False
    from judges.verdicts import ParseFailure, json_object

    try:
        return json_object(outcome.text or "") == {"ok": True}
    except ParseFailure:
        return False


def _why(outcome) -> str:
    """Why one mode failed, in a few words."""
    if outcome.status == "ok":
        return "the reply was not the requested JSON"
    return f"refused: {outcome.server_said}" if outcome.refused else str(outcome.error)


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


def _structured_cell(probe: Probe, configured: str) -> str:
    if not probe.reachable:
        return "–"
    if probe.working == configured:
        return "yes"
    return f"no ({probe.working} works)" if probe.working else "no"


def _logprobs_cell(top_logprobs: int | None, probe: Probe) -> str:
    """`yes` when asked for and returned, `no` when asked for and missing, `refused` when
    the server takes the request only without them, `off` unasked."""
    if not top_logprobs:
        return "off"
    if probe.logprobs_refused:
        return "refused"
    reply = probe.warm if probe.warm is not None else probe.first
    if reply.status != "ok":
        return "–"
    from judges.logprobs import tokens_of

    return "yes" if tokens_of(reply.payload) is not None else "no"
