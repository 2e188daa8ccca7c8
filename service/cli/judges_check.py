"""`qadi judges check`: one real call per configured judge."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

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


@judges_app.command("check")
def check(
    config: Path | None = typer.Option(None, help="judges YAML (default $QADI_JUDGES_CONFIG)"),
) -> None:
    """Call each judge with a tiny structured-output request; report reachable,
    structured-output support (the reply parses as the requested JSON) and latency.

    The first call to a provider pays LiteLLM's and the SDK's start-up (about a second for
    `openai/`) and the connection set-up, so latency is measured on a second call to each
    reachable judge, made one at a time: the call itself, as grading will see it."""
    from judges import JudgeConfigError, load_config
    from judges.client import JudgeClient
    from judges.guard import unknown_judge_maker

    try:
        router = JudgeClient(load_config(config))
    except JudgeConfigError as exc:
        fail(str(exc))

    async def probe_all():
        names = router.config.names
        first = await asyncio.gather(*(router.complete(n, PROBE, PROBE_SCHEMA) for n in names))
        timed = [
            await router.complete(name, PROBE, PROBE_SCHEMA) if outcome.status == "ok" else None
            for name, outcome in zip(names, first, strict=True)
        ]
        return names, first, timed

    names, outcomes, timed = asyncio.run(probe_all())
    table = Table(
        "judge", "model", "maker", "reachable", "structured output", "latency ms", "detail"
    )
    failures = 0
    for name, outcome, warm in zip(names, outcomes, timed, strict=True):
        reachable = outcome.status == "ok"
        structured = reachable and _is_probe_reply(outcome.text or "")
        failures += not reachable
        table.add_row(
            name,
            router.config.judge(name).model,
            router.config.maker_of_judge(router.config.judge(name)) or "unknown",
            "yes" if reachable else ("not called" if outcome.attempts == 0 else "no"),
            "yes" if structured else ("no" if reachable else "–"),
            f"{warm.latency_ms:.0f}" if warm is not None else "–",
            outcome.error or "",
        )
    out.print(table)
    config = router.config
    if config.qadi.guard == "provider":
        for name in names:
            entry = config.judge(name)
            if config.maker_of_judge(entry) is None:
                console.print(
                    f"[bold yellow]warning:[/] {unknown_judge_maker(name, entry.model)}; "
                    "until then the guard refuses every grade this judge is asked for",
                    highlight=False,
                    soft_wrap=True,
                )
    if failures:
        raise typer.Exit(1)


def _is_probe_reply(text: str) -> bool:
    try:
        return json.loads(text) == {"ok": True}
    except json.JSONDecodeError:
        return False
