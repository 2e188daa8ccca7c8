"""The offline paths under provider faults and kill -9 (issue 31.10), on SQLite and, when CI
provides it, PostgreSQL: `qadi regrade` and `qadi bench run` killed mid-run and run again
end with every answer judged (or answered) once, nothing lost, nothing duplicated, nothing
fabricated from a faulty payload."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
import yaml
from sqlalchemy import select

from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import BenchAnswerRow, BenchRunRow, JudgmentRow
from tests.chaos.harness import JUDGE_TIMEOUT, SECRET
from tests.conftest import ROOT, start_llm_server
from tests.llm_test_server import FAULT_MARK
from tests.perf.load_judge import migrated_database

# three commands each, or a report beside grading load: minutes on a machine shared by many
SLOW_MACHINE = pytest.mark.timeout(900)

FAULTS = {
    "p500": 0.1,
    "ptimeout": 0.02,
    "pmalformed": 0.05,
    "p429": 0.05,
    "pempty": 0.03,
    "latency_min": 0.05,
    "latency_max": 0.15,
    "timeout_delay": 3.0,
    "seed": 5,
}
ANSWERS = 30
JUDGES = ("gpt-judge", "claude-judge")
CONCURRENCY = 4
RETRIES = 1


def judges_file(folder: Path, api_base: str) -> Path:
    params = {"api_base": api_base, "api_key": "os.environ/QADI_CHAOS_KEY"}
    path = folder / "judges.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "model_list": [
                    {
                        "model_name": "gpt-judge",
                        "litellm_params": {"model": "openai/gpt-4.1", **params},
                    },
                    {
                        "model_name": "claude-judge",
                        "litellm_params": {"model": "openai/claude-3-5-sonnet", **params},
                        "provider": "anthropic",
                    },
                    {
                        "model_name": "qwen-target",
                        "litellm_params": {
                            "model": "hosted_vllm/Qwen/Qwen2.5-7B-Instruct",
                            **params,
                        },
                    },
                ],
                "qadi": {"num_retries": RETRIES, "timeout": JUDGE_TIMEOUT, "cooldown_time": 0},
            }
        )
    )
    return path


class Offline:
    """A database, the test double with faults, and a way to run a command killed or whole."""

    def __init__(self, folder: Path, database: str) -> None:
        self.folder = folder
        self.url = migrated_database(folder, database)
        self.llm, self.server = start_llm_server()
        self.faults(FAULTS)
        self.config = judges_file(folder, self.server.api_base)
        self.env = {**os.environ, "QADI_DATABASE_URL": self.url, "QADI_CHAOS_KEY": SECRET}

    def faults(self, faults: dict) -> None:
        httpx.post(f"{self.server.base}/_control/faults", json=faults).raise_for_status()

    def qadi(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "service", *args], cwd=ROOT, env=self.env,
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    def kill_when(self, args: list[str], ready, timeout: float = 180) -> None:
        """Start `qadi ARGS`, SIGKILL it once `ready()` is true (mid-run)."""
        process = subprocess.Popen(
            [sys.executable, "-m", "service", *args], cwd=ROOT, env=self.env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while not ready() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert process.poll() is None, "the run ended before it could be killed"
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert ready(), f"not killed mid-run: nothing to resume after {timeout} s"

    def rows(self, table, *where):
        engine = make_engine(self.url)
        try:
            with session_scope(make_sessionmaker(engine)) as session:
                return session.scalars(select(table).where(*where)).all()
        finally:
            engine.dispose()

    def close(self) -> None:
        self.llm.terminate()
        self.llm.wait(timeout=10)


@SLOW_MACHINE
def test_regrade_killed_under_provider_faults_resumes_without_loss_or_duplicates(
    database, tmp_path
):
    offline = Offline(tmp_path, database)
    try:
        answers = tmp_path / "answers.jsonl"
        answers.write_text("".join(
            json.dumps({"item_id": f"a{i}", "prompt": "شنو معنى شكو؟",
                        "response": f"answer {i}", "candidate_model": "Qwen/Qwen2.5-7B-Instruct"})
            + "\n"
            for i in range(ANSWERS)
        ))  # fmt: skip
        results = tmp_path / "results.jsonl"
        command = [
            "regrade", str(answers), "--rubric", "iraqi-linguistic-shaku-maku",
            "--judges", ",".join(JUDGES), "--config", str(offline.config),
            "--concurrency", str(CONCURRENCY), "--out", str(results),
        ]  # fmt: skip
        offline.kill_when(command, lambda: len(offline.rows(JudgmentRow)) >= 15)
        killed_rows = offline.rows(JudgmentRow)
        calls_at_kill = offline.server.settled_calls()
        again = offline.qadi(*command)  # same faults: some calls fail again (exit 1)
        assert again.returncode in (0, 1), again.stderr
        offline.faults({})
        last = offline.qadi(*command)
        assert last.returncode == 0, last.stdout + last.stderr
        rows = offline.rows(JudgmentRow)
        calls = offline.server.calls()
    finally:
        offline.close()

    verdicts = Counter(
        (r.cache_key, r.judge) for r in rows if r.status in ("ok", "parse_error") and not r.cached
    )
    killed_at = len(killed_rows)
    print(f"regrade chaos: {len(rows)} judgments, {killed_at} before the kill, {calls} calls")
    assert killed_at < ANSWERS * len(JUDGES)
    assert len(verdicts) == ANSWERS * len(JUDGES)  # nothing lost: every call has its verdict
    assert set(verdicts.values()) == {1}  # nothing judged twice
    assert not [
        r.id
        for r in rows
        if r.status == "ok" and (r.score is None or FAULT_MARK in (r.raw_reply or ""))
    ]
    assert not [r.id for r in rows if SECRET in f"{r.raw_reply}{r.error}"]
    # the runs after the kill record every call they make in a stored judgment's attempts;
    # the killed run's calls are recorded but for those not yet saved when it died (in
    # flight, waiting for the answer's other judge, or queued for the bulk save)
    attempts_at_kill = sum(r.attempts for r in killed_rows)
    assert calls - calls_at_kill == sum(r.attempts for r in rows) - attempts_at_kill
    assert calls_at_kill >= attempts_at_kill
    listed = [json.loads(line)["id"] for line in results.read_text().splitlines()]
    assert len(listed) == len(set(listed)) and set(listed) <= {r.id for r in rows}


@SLOW_MACHINE
def test_bench_run_killed_under_provider_faults_resumes_from_its_stored_answers(database, tmp_path):
    """`qadi bench run` stores answers as they come (a few at a time), so a run killed
    mid-task keeps them and the next run answers them from the cache: the calls of each run
    are those the runs before it had no usable answer for, and each run answers every item
    once."""
    items = 96
    offline = Offline(tmp_path, database)
    try:
        offline.faults({**FAULTS, "latency_min": 0.1, "latency_max": 0.3})
        data = tmp_path / "data"
        data.mkdir()
        (data / "kinayat.jsonl").write_text("".join(
            json.dumps({"Idiom": f"كناية رقم {i}", "Ar_Explanation": f"معنى {i}",
                        "Incorrect_Explanation": f"معنى خاطئ {i}"}, ensure_ascii=False) + "\n"
            for i in range(items)
        ))  # fmt: skip
        command = [
            "bench", "run", "--suite", "kinayat-understanding", "--model", "qwen-target",
            "--config", str(offline.config), "--data-dir", str(data),
            "--concurrency", str(CONCURRENCY),
        ]  # fmt: skip
        offline.kill_when(command, lambda: len(offline.rows(BenchAnswerRow)) >= 16)
        calls = [offline.server.settled_calls()]
        faulty = offline.qadi(*command)
        assert faulty.returncode == 0, faulty.stdout + faulty.stderr
        calls.append(offline.server.calls())
        offline.faults({})
        clean = offline.qadi(*command)
        assert clean.returncode == 0, clean.stdout + clean.stderr
        calls.append(offline.server.calls())
        runs = offline.rows(BenchRunRow)
        answers = offline.rows(BenchAnswerRow)
    finally:
        offline.close()

    by_run = {run.id: [a for a in answers if a.run_id == run.id] for run in runs}
    killed, resumed, last = sorted(runs, key=lambda run: run.created_at)
    assert killed.summary == {}  # it never finished: the kill came mid-task
    for run_id, rows in by_run.items():
        assert len({r.item_id for r in rows}) == len(rows), run_id  # no item answered twice
    assert len(by_run[resumed.id]) == len(by_run[last.id]) == items  # nothing lost

    def usable(run) -> set[str]:
        return {r.cache_key for r in by_run[run.id] if r.output is not None and r.error is None}

    assert len(by_run[killed.id]) >= 16 and usable(killed)  # stored before the kill
    assert usable(last) == {r.cache_key for r in by_run[last.id]}  # every item answered
    # a run calls only for items no run before it answered: none twice (retries aside)
    assert calls[1] - calls[0] <= (RETRIES + 1) * (items - len(usable(killed)))
    assert calls[2] - calls[1] == items - len(usable(killed) | usable(resumed))
    assert not [a.id for a in answers if a.output and FAULT_MARK in a.output]
