"""Chaos runs against a real `qadi serve` (127.0.0.1 only, bounded in time): API keys, two
judges, provider faults from the LLM test double, and events in the middle of the load (kill
-9 with retry storms, the database stopped or made unwritable). Every run ends with the same
accounting, printed and returned:

- requests: final answers the clients got; 5xx by status; `500` must be 0;
- backend calls (at the test double) and judgments stored from calls;
- duplicates: a request with two judgments from one judge;
- lost: an accepted request left neither `done` nor `abandoned`, a 2xx answer whose
  judgments are not stored, or (`strict_calls`) a backend call with no stored judgment;
- fabricated: an `ok` judgment without a score or made from a faulty payload.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml
from sqlalchemy import func, select

from tests.conftest import free_port, start_llm_server
from tests.llm_test_server import FAULT_MARK
from tests.perf.load_judge import Service, api_key, body_for, migrated_database

PROVIDER_FAULTS = {
    "p500": 0.04,
    "ptimeout": 0.01,
    "pmalformed": 0.03,
    "p429": 0.03,
    "pempty": 0.03,
    "ptool": 0.03,
    "prefusal": 0.03,
    "pecho": 0.03,
    "latency_min": 0.02,
    "latency_max": 0.2,
    "timeout_delay": 3.0,
    "seed": 11,
}
JUDGE_TIMEOUT = 1.5
SECRET = "sk-chaos-secret-0123456789"


@dataclass
class Chaos:
    """One run: the service, its database, the test double, and the clients' records."""

    workdir: Path
    database_url: str | None = None
    faults: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    qadi: dict = field(default_factory=dict)  # judges-file `qadi:` options over the defaults
    workers: int = 1  # uvicorn worker processes
    transport: str | None = None  # every judge's `transport:` (judges/transport.py)
    records: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.url = migrated_database(self.workdir, self.database_url)
        self.llm, self.server = start_llm_server()
        httpx.post(f"{self.server.base}/_control/faults", json=self.faults).raise_for_status()
        config = self.workdir / "judges.yaml"
        params = {"api_base": self.server.api_base, "api_key": "os.environ/QADI_CHAOS_KEY"}
        how = {"transport": self.transport} if self.transport else {}
        config.write_text(
            yaml.safe_dump(
                {
                    "model_list": [
                        {
                            "model_name": "gpt-judge",
                            "litellm_params": {"model": "openai/gpt-4.1", **params},
                            **how,
                        },
                        {
                            "model_name": "claude-judge",
                            "litellm_params": {"model": "openai/claude-3-5-sonnet", **params},
                            "provider": "anthropic",
                            **how,
                        },
                    ],
                    # no cooldown: every request reaches the double, so calls can be counted
                    "qadi": {
                        "num_retries": 1,
                        "timeout": JUDGE_TIMEOUT,
                        "cooldown_time": 0,
                        "panel": ["gpt-judge", "claude-judge"],
                        **self.qadi,
                    },
                }
            )
        )
        os.environ["QADI_CHAOS_KEY"] = SECRET
        env = {"QADI_AUTH": "on", "QADI_REAP_INTERVAL_SECONDS": "1", **self.env}
        self.service = Service(self.url, config, free_port(), self.workdir, env, self.workers)
        self.headers = {"Authorization": f"Bearer {api_key(self.url)}"}
        self.service.start()
        self.base = f"http://127.0.0.1:{self.service.port}"

    def close(self) -> None:
        self.service.stop()
        self.llm.terminate()
        self.llm.wait(timeout=10)

    async def send(self, client: httpx.AsyncClient, key: str, body: dict) -> dict:
        """POST until a final answer: retry the same key through crashes, 409 in progress,
        and 503 busy or database away (as a well-behaved client does)."""
        started, attempts = time.monotonic(), 0
        while True:
            attempts += 1
            try:
                response = await client.post("/judge", json=body, headers={"Idempotency-Key": key})
            except httpx.TransportError:
                await asyncio.sleep(0.3)
                continue
            try:
                payload = response.json()
            except ValueError:
                payload = {"detail": response.text}
            problems = payload.get("detail") if isinstance(payload, dict) else None
            detail = problems[0]["msg"] if isinstance(problems, list) and problems else ""
            retry = response.status_code == 409 and "in progress" in detail
            retry |= response.status_code == 503 and detail.startswith(("busy", "the database"))
            if retry and attempts < 300:
                await asyncio.sleep(min(float(response.headers.get("Retry-After", "1")), 2.0))
                continue
            record = {
                "key": key,
                "status": response.status_code,
                "body": payload,
                "json": response.headers.get("content-type", "").startswith("application/json"),
                "retry_after": response.headers.get("Retry-After"),
                "attempts": attempts,
                "latency": time.monotonic() - started,
            }
            self.records.append(record)
            return record

    async def load(
        self,
        clients: int,
        seconds: float,
        events: list[tuple[float, Callable[[], Awaitable[None]]]] = (),
    ) -> None:
        """`clients` loops of fresh requests for `seconds`; each event runs at its time."""
        deadline = time.monotonic() + seconds

        async def loop(number: int) -> None:
            async with httpx.AsyncClient(
                base_url=self.base, timeout=60, headers=self.headers
            ) as client:
                sequence = 0
                while time.monotonic() < deadline:
                    sequence += 1
                    await self.send(client, str(uuid.uuid4()), body_for(number, sequence))

        async def at(delay: float, event) -> None:
            await asyncio.sleep(delay)
            await event()

        await asyncio.gather(*(loop(n) for n in range(clients)), *(at(t, e) for t, e in events))

    def load_then_account(
        self,
        clients: int,
        seconds: float,
        events: list[tuple[float, Callable[[], Awaitable[None]]]] = (),
    ) -> dict:
        """A run of `load` with its events, settled and accounted (strict calls); the
        service and the double are closed after, whatever happened."""

        async def scenario() -> dict:
            await self.load(clients, seconds, events)
            await self.settle()
            return self.account(strict_calls=True)

        try:
            return asyncio.run(scenario())
        finally:
            self.close()

    async def storm(self, keys: int, retries: int) -> dict[str, list[dict]]:
        """`retries` concurrent clients per key, all sending the same key and body."""
        async with httpx.AsyncClient(
            base_url=self.base, timeout=60, headers=self.headers
        ) as client:
            bodies = {f"storm-{k}": body_for(1000 + k, 0) for k in range(keys)}
            sent = await asyncio.gather(
                *(
                    self.send(client, key, body)
                    for key, body in bodies.items()
                    for _ in range(retries)
                )
            )
        answers: dict[str, list[dict]] = {}
        for record in sent:
            answers.setdefault(record["key"], []).append(record)
        return answers

    def account(self, strict_calls: bool) -> dict:
        """The figures of the run (see the module docstring), after pending requests have
        had time to finish or be reaped."""
        from service.db.engine import make_engine, make_sessionmaker, session_scope
        from service.db.schema import GradeRequestRow, JudgmentRow

        received = httpx.get(f"{self.server.base}/_control/calls").json()
        calls = received["count"]
        engine = make_engine(self.url)
        with session_scope(make_sessionmaker(engine)) as session:
            rows = {r.id: r for r in session.scalars(select(JudgmentRow))}
            states = Counter(session.scalars(select(GradeRequestRow.status)))
            duplicates = session.execute(  # of HTTP requests (a probe run's answer none)
                select(JudgmentRow.request_id, JudgmentRow.judge, func.count())
                .where(JudgmentRow.request_id.is_not(None))
                .group_by(JudgmentRow.request_id, JudgmentRow.judge)
                .having(func.count() > 1)
            ).all()
        engine.dispose()
        missing = [
            r["key"]
            for r in self.records
            if r["status"] < 300
            for j in r["body"].get("results", [])
            if j["id"] not in rows
        ]
        made = sum(r.attempts for r in rows.values())  # calls, retries included
        fabricated = [
            r.id
            for r in rows.values()
            if r.status == "ok" and (r.score is None or FAULT_MARK in (r.raw_reply or ""))
        ]
        leaked = [r.id for r in rows.values() if SECRET in f"{r.raw_reply}{r.error}"]
        leaked += [r["key"] for r in self.records if SECRET in str(r["body"])]
        statuses = Counter(r["status"] for r in self.records)
        figures = {
            "requests": len(self.records),
            "statuses": dict(sorted(statuses.items())),
            "5xx": sum(n for s, n in statuses.items() if s >= 500),
            "500": statuses.get(500, 0),
            "non_json": sum(1 for r in self.records if not r["json"]),
            "backend_calls": calls,
            "backend_statuses": received["statuses"],  # what the double answered, by status
            "judgments": len(rows),
            "calls_recorded": made,
            "duplicates": len(duplicates),
            "lost": states.get("pending", 0)
            + len(missing)
            + (max(0, calls - made) if strict_calls else 0),
            "calls_without_judgment": calls - made,
            "abandoned": states.get("abandoned", 0),
            "fabricated": len(fabricated),
            "secrets_leaked": len(leaked),
        }
        print(f"chaos figures: {figures}")
        return figures

    async def settle(self, timeout: float = 30.0) -> None:
        """Wait until no request is pending (finished, or closed by the reaper)."""
        from service.db.engine import make_engine, make_sessionmaker, session_scope
        from service.db.schema import GradeRequestRow

        engine = make_engine(self.url)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                with session_scope(make_sessionmaker(engine)) as session:
                    pending = session.scalar(
                        select(func.count()).where(GradeRequestRow.status == "pending")
                    )
                if not pending:
                    return
                await asyncio.sleep(0.5)
        finally:
            engine.dispose()
