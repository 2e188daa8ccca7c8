"""`qadi regrade --engine ray` on a local Ray (2 CPUs, started once for the module) against
the LLM test double: the same outcomes as the default engine on the same input (guard skips,
a substitute standing in for a failing judge, a parse error), each engine reuses what the other
stored, and a run whose CLI process is killed resumes with every answer graded exactly once.
Each ray run starts an actor pool (a few seconds: every actor imports LiteLLM), so the tests
make few of them."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time

import pytest
import ray
import yaml

from service.db.engine import upgrade
from tests.conftest import ROOT, judges_config_data, settled
from tests.conftest import run_cli as qadi
from tests.integration.test_regrade import RUBRIC, stored
from tests.integration.test_regrade_memory import SMALL, assert_bounded, measured_regrade

# What a Ray Data driver's memory grows by over its first hundred blocks whatever it
# carries (its buffers and the arrow pool settling): a bare pipeline of 256-row blocks
# through a two-actor pool grows by 24 MB at 20k rows, 30 MB at 60k, 34 MB at 200k.
RAY_WARM_UP_MB = 40

# The driver's share of the object store (below) is pages it touched once and keeps counted.
# Measured on 2 cores (docs/explanation/performance.md): store pages +0.8 MB (0.05 KB per
# answer; the code before, +19 MB, 1.1 KB), peak +15 MB in all from 2,000 to 20,000 answers.
SHARED_KB_PER_ANSWER = 0.1
PEAK_KB_PER_ANSWER = 0.5
# Half the answers of the default engine's memory test: Ray's run took two minutes of CI at
# 20,000, and the code before would still show +8.8 MB of store pages at 10,000.
RAY_LARGE = 10_000

# `qadi regrade ... --address A` in a process that joined the Ray at A first, so the run
# leaves it joined (`connect`) and the pages of the object store it touched are still mapped
# when it prints its peak resident memory (KB) and its resident shared memory (KB).
DRIVER_MEASURE = """
import logging, sys
import ray
ray.init(address=sys.argv[sys.argv.index("--address") + 1], logging_level=logging.WARNING,
         log_to_driver=False)
from service.cli import app
try:
    app(sys.argv[1:])
except SystemExit as exc:
    assert exc.code in (None, 0), exc.code
status = open("/proc/self/status").read()
print(*(status.split(field + ":")[1].split()[0] for field in ("VmHWM", "RssShmem")))
"""


def driver_memory_kb(workdir, count: int, config, address: str) -> tuple[int, int]:
    """The peak resident memory (KB) of the driver of `qadi regrade --engine ray` over
    `count` answers (tests/integration/test_regrade_memory.py's inputs), and the part of its
    resident memory that is the object store's shared pages, at the end of the run."""
    on_ray = ("--engine", "ray", "--address", address)
    peak, shared = measured_regrade(workdir, count, config, *on_ray, script=DRIVER_MEASURE)
    return int(peak), int(shared)


@pytest.fixture(scope="module")
def ray_address():
    """One local Ray for the module: in-process CLI runs reuse it, subprocesses join it."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def write_answers(path, count: int) -> None:
    """Every fifth answer is GPT-4o's: the guard keeps gpt-judge (OpenAI) off it."""
    path.write_text(
        "".join(
            json.dumps(
                {
                    "item_id": f"a{i}",
                    "prompt": "شنو معنى شكو؟",
                    "response": f"answer {i} ",
                    "candidate_model": "gpt-4o" if i % 5 == 0 else "Qwen/Qwen2.5-7B-Instruct",
                }
            )
            + "\n"
            for i in range(count)
        )
    )


@pytest.fixture
def regrade(llm_server, tmp_path):
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    answers = tmp_path / "answers.jsonl"
    write_answers(answers, 30)

    def run(url, out, *extra):
        return qadi(
            "regrade",
            str(answers),
            "--rubric",
            RUBRIC,
            "--judges",
            "gpt-judge,llama-judge",
            "--config",
            str(config),
            "--concurrency",
            "4",
            "--out",
            str(out),
            *extra,
            env={"QADI_DATABASE_URL": url},
        )

    return run, answers, config


def outcomes(out) -> list[tuple]:
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    return sorted(
        (x["item_id"], x["judge"], x["status"], x["score"], x["cache_key"], x["cached"])
        for x in lines
    )


def summary(stdout: str) -> dict[str, str]:
    """The summary table's rows, less the two that measure time."""
    rows = [line.strip("│ ").split("│") for line in stdout.splitlines() if line.startswith("│")]
    table = {name.strip(): value.strip() for name, value in rows}
    return {k: v for k, v in table.items() if k not in ("wall time", "calls/s")}


def test_ray_engine_grades_like_the_default_engine_and_each_reuses_the_other(
    ray_address, regrade, migrated_db, llm_server, tmp_path
):
    run, *_ = regrade
    llm_server.rules(
        {"match": "answer 7 ", "reply": {"content": "I refuse to use JSON"}},
        # gpt-judge's provider fails on answer 3: its substitute claude-judge answers instead
        {"match": "answer 3 ", "model": "gpt-4.1", "reply": {"status": 500}},
    )
    local_url = f"sqlite:///{tmp_path / 'local.db'}"
    upgrade(local_url)
    local = run(local_url, tmp_path / "local.jsonl")
    assert local.returncode == 1  # the parse error and the failed call are listed
    local_calls = llm_server.calls()
    on_ray = run(migrated_db, tmp_path / "ray.jsonl", "--engine", "ray", "--ray-workers", "2")
    assert on_ray.returncode == 1, on_ray.stderr
    assert llm_server.calls() == 2 * local_calls

    assert outcomes(tmp_path / "ray.jsonl") == outcomes(tmp_path / "local.jsonl")
    assert summary(on_ray.stdout) == summary(local.stdout)
    # by hand: 30 answers × 2 judges; on the 6 GPT-4o answers (a0, a5, ...) gpt-judge is
    # skipped and claude-judge substitutes; on a3 gpt-judge fails and claude-judge stands in
    table = summary(on_ray.stdout)
    assert table["skipped by the guard"] == "6"
    assert table["graded (new calls ok)"] == "58"  # 22 gpt-judge + 7 claude-judge + 29 llama
    assert table["parse errors"] == "2"  # a7, both judges
    assert table["backend errors"] == "1"
    assert "parse_error item a7 judge llama-judge" in on_ray.stdout
    rows = stored(migrated_db)
    judges = sorted(r.judge for r in rows if r.status == "ok")
    assert judges.count("claude-judge") == 7 and judges.count("llama-judge") == 29
    assert [r.score for r in rows if r.status == "parse_error"] == [None, None]
    assert len({r.cache_key for r in rows}) == len(rows)

    calls = llm_server.calls()
    # the default engine rerun over what the ray engine stored reuses all 60 results but
    # gpt-judge's failure on a3, which is called again (twice: num_retries 1) and fails again
    again = run(migrated_db, tmp_path / "again.jsonl")
    table = summary(again.stdout)
    assert table["already stored (not called)"] == "60"
    assert table["backend errors"] == "1" and table["graded (new calls ok)"] == "0"
    assert llm_server.calls() - calls == 2


def test_a_killed_ray_run_resumes_with_every_answer_graded_once(ray_address, llm_server, tmp_path):
    url = f"sqlite:///{tmp_path / 'qadi.db'}"
    upgrade(url)
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    answers = tmp_path / "answers.jsonl"
    write_answers(answers, 40)
    args = [
        "regrade",
        str(answers),
        "--rubric",
        RUBRIC,
        "--judges",
        "llama-judge",
        "--config",
        str(config),
        "--concurrency",
        "2",
        "--out",
        str(tmp_path / "results.jsonl"),
        "--engine",
        "ray",
    ]
    env = {"QADI_DATABASE_URL": url}
    # the first 5 answers graded by the default engine: the ray engine must not call them
    assert qadi(*args[:-2], "--limit", "5", env=env).returncode == 0
    first = {r.cache_key: r.id for r in stored(url)}
    llm_server.faults(latency_min=0.3, latency_max=0.3)
    process = subprocess.Popen(
        [sys.executable, "-m", "service", *args, "--address", ray_address],
        cwd=ROOT,
        env={**os.environ, "QADI_DATABASE_URL": url},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 180
    while len(stored(url)) < 5 + 8 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    # Ray ends the dead driver's actors; calls in flight then may still be saved, so wait
    # until nothing moves for 3 s before counting (a starved actor can stall for one)
    done_before, before = settled(lambda: (len(stored(url)), llm_server.calls()), 1.0, 3)
    assert 5 + 8 <= done_before < 40
    assert before >= done_before
    llm_server.faults()
    resumed = qadi(*args, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert llm_server.calls() - before == 40 - done_before
    rows = stored(url)
    assert len(rows) == 40 and len({r.cache_key for r in rows}) == 40
    assert {r.cache_key: r.id for r in rows if r.cache_key in first} == first
    lines = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sorted(x["id"] for x in lines) == sorted(r.id for r in rows)


def test_ray_options_are_refused_with_the_local_engine(regrade, tmp_path):
    run, *_ = regrade
    done = run(f"sqlite:///{tmp_path / 'x.db'}", tmp_path / "x.jsonl", "--address", "auto")
    assert done.returncode != 0
    assert "--address joins a Ray cluster: add --engine ray" in done.stdout + done.stderr


def test_ray_driver_memory_does_not_grow_with_its_input(ray_address, llm_server, tmp_path):
    """The driver of `--engine ray` reads the answers as the actor pool takes them, holds no
    request, and sends and reads every block inline rather than through the object store
    (service/regrading/on_ray.py): at RAY_LARGE answers its resident share of the store
    exceeds that at SMALL by less than SHARED_KB_PER_ANSWER per extra answer (the code before
    read its outcomes from the store: 1.1 KB per answer), and its peak resident memory by
    less than PEAK_KB_PER_ANSWER beyond RAY_WARM_UP_MB."""
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    small_peak, small_shared = driver_memory_kb(tmp_path / "small", SMALL, config, ray_address)
    large_peak, large_shared = driver_memory_kb(tmp_path / "large", RAY_LARGE, config, ray_address)
    sizes = (SMALL, RAY_LARGE)
    assert_bounded(small_shared, large_shared, bound=SHARED_KB_PER_ANSWER,
                   what="the object store's pages", sizes=sizes)  # fmt: skip
    assert_bounded(small_peak, large_peak, RAY_WARM_UP_MB, PEAK_KB_PER_ANSWER, sizes=sizes)


def test_a_run_in_several_chunks_grades_like_the_default_engine(
    ray_address, regrade, monkeypatch, tmp_path
):
    """Each chunk of CHUNK_ANSWERS answers is a dataset and an actor pool of its own
    (service/regrading/on_ray.py): the feeder's blocks carry on across them, none lost or
    taken twice. 30 answers at concurrency 4 are 2 blocks of 16; a chunk of 8 answers is one."""
    from service.regrading import on_ray

    monkeypatch.setattr(on_ray, "CHUNK_ANSWERS", 8)
    chunks, pipeline = [], on_ray._pipeline
    monkeypatch.setattr(on_ray, "_pipeline", lambda *a: chunks.append(a[2]) or pipeline(*a))
    run, *_ = regrade
    urls = [f"sqlite:///{tmp_path / name}.db" for name in ("local", "ray")]
    for url in urls:
        upgrade(url)
    local = run(urls[0], tmp_path / "local.jsonl")
    on_ray_run = run(urls[1], tmp_path / "ray.jsonl", "--engine", "ray", "--ray-workers", "2")
    assert local.returncode == on_ray_run.returncode == 0, on_ray_run.stderr
    assert outcomes(tmp_path / "ray.jsonl") == outcomes(tmp_path / "local.jsonl")
    assert len(outcomes(tmp_path / "ray.jsonl")) == 60  # 30 answers x 2 judges
    assert summary(on_ray_run.stdout) == summary(local.stdout)
    assert chunks == [1, 1]  # placeholders (blocks) per dataset
