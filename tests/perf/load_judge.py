"""Load and fault harness for POST /judge (127.0.0.1 only, bounded in time).

Starts the LLM test double with injected faults (5% HTTP 500, 2% timeouts, 2% malformed JSON,
latency 50-300 ms), migrates a database (PostgreSQL from QADI_TEST_POSTGRES_URL, else a
temporary SQLite file), starts `qadi serve`, and runs N concurrent clients for a bounded time.
Each request carries an Idempotency-Key; a client retries the same key and body after a
connection error, a 409 "in progress" or a 503 with Retry-After.

With --crash the service is killed with SIGKILL in the middle of the load and restarted.

Invariants checked at the end:
- no response with status 500 from the service;
- every 2xx response's judgment ids exist in the database with the same scores;
- every failed judge call in a response is stored with its failure status;
- no request has two judgments from the same judge, and every judgment belongs to a
  finished request (no orphan, nothing half-written);
- without a crash: every stored call the double answered reached it, and no call reached it
  unrecorded (calls counted on arrival; a timed-out call or one whose connection failed may
  never have arrived).

Run: .venv/bin/python tests/perf/load_judge.py [--clients 50] [--duration 60] [--crash]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tests.conftest import (  # noqa: E402
    FAST_TAKEOVER,
    free_port,
    reset_postgres,
    start_llm_server,
    wait_for_http,
)

JUDGE_TIMEOUT = 2.0
FAULTS = {
    "p500": 0.05,
    "ptimeout": 0.02,
    "pmalformed": 0.02,
    "latency_min": 0.05,
    "latency_max": 0.3,
    "timeout_delay": JUDGE_TIMEOUT + 1,
    "seed": 7,
}


class Service:
    def __init__(
        self,
        database_url: str,
        config: Path,
        port: int,
        workdir: Path,
        env: dict[str, str] | None = None,
        workers: int = 1,
        tree: Path = ROOT,
        prefix: tuple[str, ...] = (),
    ) -> None:
        """`tree`: the source tree to serve from (an earlier build's worktree); `prefix`:
        what runs the service (valgrind's command line, say)."""
        self.workers = workers
        self.tree = tree
        self.prefix = prefix
        self.env = {
            **os.environ,
            "QADI_DATABASE_URL": database_url,
            "QADI_AUTH": "off",
            "QADI_JUDGES_CONFIG": str(config),
            **(env or {}),
        }
        self.port = port
        self.workdir = workdir
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 180) -> None:
        self.process = subprocess.Popen(
            [*self.prefix, sys.executable, "-m", "service", "serve", "--port", str(self.port),
             "--workers", str(self.workers)],  # fmt: skip
            cwd=self.tree,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=open(self.workdir / "service.log", "a"),  # noqa: SIM115
        )
        wait_for_http(
            f"http://127.0.0.1:{self.port}/healthz", timeout=timeout, process=self.process
        )

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self, timeout: float = 30) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=timeout)


def api_key(database_url: str) -> str:
    """A real API key with the judge scope, made as an operator makes one."""
    done = subprocess.run(
        [sys.executable, "-m", "service", "keys", "create", "--name", "load", "--scopes", "judge"],
        cwd=ROOT,
        check=True,
        env={**os.environ, "QADI_DATABASE_URL": database_url},
        capture_output=True,
        text=True,
    )
    return next(w for w in done.stdout.split() if w.startswith("qadi_"))


def body_for(number: int, sequence: int) -> dict:
    return {
        "kind": "rubric",
        "prompt": "شنو معنى شكو؟",
        "response": f"client {number} answer {sequence}",
        "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
        "rubric_id": "iraqi-linguistic-shaku-maku",
        "metadata": {"item_id": f"c{number}-{sequence}"},
    }


async def client_loop(
    number: int, base: str, deadline: float, records: list, headers: dict | None = None
) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=60, headers=headers) as client:
        sequence = 0
        while time.monotonic() < deadline:
            sequence += 1
            key = str(uuid.uuid4())
            records.append(await send_until_final(client, key, body_for(number, sequence)))


async def send_until_final(client: httpx.AsyncClient, key: str, body: dict) -> dict:
    started = time.monotonic()
    attempts = 0
    while True:
        attempts += 1
        try:
            response = await client.post("/judge", json=body, headers={"Idempotency-Key": key})
        except httpx.TransportError:
            await asyncio.sleep(0.5)  # the service is down (crash); retry the same key
            continue
        problems = response.json().get("detail") if response.content else None
        detail = problems[0]["msg"] if isinstance(problems, list) and problems else ""
        retry = response.status_code == 409 and "in progress" in detail
        # the database was away or the service at capacity: the same key again, later
        retry |= response.status_code == 503 and detail.startswith(("busy", "the database"))
        if retry and attempts < 200:
            await asyncio.sleep(float(response.headers.get("Retry-After", "1")))
            continue
        return {
            "key": key,
            "status": response.status_code,
            "body": response.json(),
            "latency": time.monotonic() - started,
            "attempts": attempts,
        }


def _answered(row) -> bool:
    """Whether a stored call got an answer from the double, so it must have reached it. A
    call qadi timed out on may not have (a double starved under load), nor one whose
    connection failed: LiteLLM's APIConnectionError, a connection refused, reset or timed out
    while connecting (CI34: 302 such calls stored against 301 arrivals)."""
    return row.status != "timeout" and not (row.error or "").startswith("APIConnectionError")


def check(records: list[dict], database_url: str, server_calls: int, crashed: bool) -> dict:
    from sqlalchemy import func, select

    from service.db.engine import make_engine, make_sessionmaker, session_scope
    from service.db.schema import GradeRequestRow, JudgmentRow

    problems: list[str] = []
    with session_scope(make_sessionmaker(make_engine(database_url))) as session:
        rows = {r.id: r for r in session.scalars(select(JudgmentRow))}
        requests = {r.id: r for r in session.scalars(select(GradeRequestRow))}
        duplicates = session.execute(
            select(JudgmentRow.request_id, JudgmentRow.judge, func.count())
            .group_by(JudgmentRow.request_id, JudgmentRow.judge)
            .having(func.count() > 1)
        ).all()
    for record in records:
        status, body = record["status"], record["body"]
        if status == 500:
            problems.append(f"service answered 500 for {record['key']}")
        for result in body.get("results", []) if isinstance(body, dict) else []:
            row = rows.get(result["id"])
            if row is None:
                problems.append(f"judgment {result['id']} of a {status} response is missing")
            elif row.status != result["status"] or row.score != result["score"]:
                problems.append(f"judgment {result['id']} differs from its response")
    if duplicates:
        problems.append(f"{len(duplicates)} request(s) have two judgments from one judge")
    orphans = [
        r
        for r in rows.values()
        if requests.get(r.request_id) is None or requests[r.request_id].status != "done"
    ]
    if orphans:
        problems.append(f"{len(orphans)} judgment(s) belong to no finished request")
    made = sum(r.attempts for r in rows.values())  # calls, retries included; 0 when cached
    # only the calls that got the double's answer must all have reached it, and no call
    # reached it unrecorded
    answered = sum(r.attempts for r in rows.values() if _answered(r))
    if not crashed and not answered <= server_calls <= made:
        kinds = Counter(r.status if r.error is None else r.error.split(":")[0]
                        for r in rows.values())  # fmt: skip
        problems.append(
            f"{made} judgments from calls ({answered} answered by the double), "
            f"but the test double got {server_calls}; stored: {dict(kinds)}"
        )
    return {
        "judgments": len(rows),
        "judgments_from_calls": made,
        "server_calls": server_calls,
        "problems": problems,
    }


def migrated_database(workdir: Path, url: str | None = None, tree: Path = ROOT) -> str:
    """An empty, migrated database (by the migrations of `tree`): PostgreSQL from
    QADI_TEST_POSTGRES_URL (reset), else a SQLite file in `workdir`."""
    url = url or os.environ.get("QADI_TEST_POSTGRES_URL") or f"sqlite:///{workdir / 'qadi.db'}"
    if url.startswith("postgresql"):
        reset_postgres(url)
    subprocess.run(
        [sys.executable, "-m", "service", "db", "upgrade"],
        cwd=tree,
        check=True,
        env={**os.environ, "QADI_DATABASE_URL": url},
        capture_output=True,
    )
    return url


def run(clients: int, duration: float, crash: bool, database_url: str | None = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        url = migrated_database(workdir, database_url)
        llm, server = start_llm_server()
        httpx.post(f"{server.base}/_control/faults", json=FAULTS).raise_for_status()
        config = workdir / "judges.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "model_list": [
                        {
                            "model_name": "gpt-judge",
                            "litellm_params": {
                                "model": "openai/gpt-4.1",
                                "api_base": server.api_base,
                                "api_key": "sk-load",
                            },
                        }
                    ],
                    "qadi": {"num_retries": 0, "timeout": JUDGE_TIMEOUT},
                }
            )
        )
        # after a crash, the killed requests' keys answer 409 until their claims are older
        # than the request deadline: 21 s with FAST_TAKEOVER, 49 s with the defaults
        service = Service(url, config, free_port(), workdir, FAST_TAKEOVER if crash else None)
        service.start()
        records: list[dict] = []
        started = time.monotonic()
        try:

            async def load() -> None:
                base = f"http://127.0.0.1:{service.port}"
                deadline = time.monotonic() + duration
                tasks = [
                    asyncio.create_task(client_loop(n, base, deadline, records))
                    for n in range(clients)
                ]
                if crash:
                    await asyncio.sleep(duration * 0.4)
                    await asyncio.to_thread(service.kill)
                    await asyncio.to_thread(service.start)
                await asyncio.gather(*tasks)

            asyncio.run(load())
            elapsed = time.monotonic() - started
            calls = server.settled_arrivals()
        finally:
            service.stop()
            llm.terminate()
        report = check(records, url, calls, crash)
    latencies = sorted(r["latency"] for r in records)

    def percentile(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] if latencies else 0.0

    return {
        "clients": clients,
        "duration_s": round(elapsed, 1),
        "crash": crash,
        "requests": len(records),
        "requests_per_s": round(len(records) / elapsed, 1),
        "latency_s": {
            "p50": round(percentile(0.5), 3),
            "p95": round(percentile(0.95), 3),
            "p99": round(percentile(0.99), 3),
            "mean": round(statistics.fmean(latencies), 3) if latencies else 0.0,
        },
        "status_counts": dict(Counter(r["status"] for r in records)),
        "retried_requests": sum(1 for r in records if r["attempts"] > 1),
        **report,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--crash", action="store_true")
    args = parser.parse_args()
    result = run(args.clients, args.duration, args.crash)
    print(json.dumps(result, indent=2))
    print("invariants held" if not result["problems"] else "INVARIANTS BROKEN")
    sys.exit(1 if result["problems"] else 0)


if __name__ == "__main__":
    main()
