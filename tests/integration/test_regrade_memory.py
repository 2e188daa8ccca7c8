"""`qadi regrade` holds memory bounded by its concurrency, not by its input (issue 39): the
answers are read as they are graded and each result goes to the database and --out as it
comes. Two runs, of 2,000 and 20,000 answers, in their own processes; the peak resident
memory of the larger may exceed the smaller's by less than 1 KB per extra answer (the code
before held every answer, request and result line: about 10 KB per answer). The same holds
for `--ingest` of a batch results file (its requests and results matched through an index
on disk) and for `--engine ray` (tests/integration/test_regrade_ray.py).

To stay well under a minute, one answer in ten is new text and the other nine repeat one
graded earlier, so they are answered from the store (a cached result, the resume path) and
still each get a line in --out; the runs make 200 and 2,000 calls. `--ingest` makes no
call, so its answers are all distinct: a results line each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from service.db.engine import upgrade
from tests.conftest import ROOT, judges_config_data
from tests.llm_test_server import completion_body, default_content
from tests.perf.bench_reports_at_scale import MEASURE

SMALL, LARGE = 2_000, 20_000
BOUND_KB_PER_ANSWER = 1.0
NEW_TEXT_EVERY = 10
RUBRIC = "iraqi-linguistic-shaku-maku"


def write_answers(path, count: int, new_text_every: int = NEW_TEXT_EVERY) -> None:
    """`count` answers with distinct ids; the text of answer i is that of i % (count /
    new_text_every)."""
    distinct = count // new_text_every
    with path.open("w", encoding="utf-8") as handle:
        for i in range(count):
            line = {
                "item_id": f"a{i}",
                "prompt": "شنو معنى شكو؟",
                "response": f"answer {i % distinct}",
                "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
            }
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")


def regrade_args(answers: Path, config: Path, *extra: str) -> list[str]:
    return ["regrade", str(answers), "--rubric", RUBRIC, "--judges", "gpt-judge", "--config",
            str(config), "--concurrency", "32", *extra]  # fmt: skip


def run_measured(workdir: Path, args: list[str], url: str, script: str = MEASURE) -> list[float]:
    """The numbers `script` prints last after running `qadi ARGS` in a fresh process, which
    must succeed: MEASURE's first is the process's own peak resident memory (KB; VmHWM, as
    tests/perf/bench_reports_at_scale.py reads it: a child's ru_maxrss carries this test
    process's peak)."""
    command = [sys.executable, "-c", script, *args]
    env = {**os.environ, "QADI_DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
    with open(workdir / "output.txt", "w") as output, open(workdir / "errors.txt", "w") as errors:
        status = subprocess.run(command, cwd=ROOT, env=env, stdout=output, stderr=errors).returncode
    printed = (workdir / "output.txt").read_text()
    assert status == 0, printed[-1500:] + (workdir / "errors.txt").read_text()[-1500:]
    return [float(number) for number in printed.strip().splitlines()[-1].split()]


def fresh_run(workdir: Path, count: int, new_text_every: int = NEW_TEXT_EVERY):
    """A new folder with `count` answers and a new SQLite database: (answers, results, url)."""
    workdir.mkdir()
    url = f"sqlite:///{workdir / 'qadi.db'}"
    upgrade(url)
    answers = workdir / "answers.jsonl"
    write_answers(answers, count, new_text_every)
    return answers, workdir / "results.jsonl", url


def check_results(results: Path, count: int) -> None:
    """Every answer got its one ok line in --out."""
    with results.open(encoding="utf-8") as handle:
        lines = [json.loads(line) for line in handle]
    assert len(lines) == count and {line["status"] for line in lines} == {"ok"}
    assert len({line["item_id"] for line in lines}) == count


def measured_regrade(workdir, count: int, config, *extra: str, script: str = MEASURE):
    """What `script` prints of `qadi regrade` over `count` answers (`run_measured`), in a
    fresh process and a fresh SQLite database; checks that every answer got its results line."""
    answers, results, url = fresh_run(workdir, count)
    args = regrade_args(answers, config, "--out", str(results), *extra)
    printed = run_measured(workdir, args, url, script)
    check_results(results, count)
    return printed


def peak_rss_kb(workdir, count: int, config, *extra: str) -> int:
    """The peak resident memory (KB) of `qadi regrade` over `count` answers."""
    return int(measured_regrade(workdir, count, config, *extra)[0])


def write_batch_results(batch: Path, results: Path) -> None:
    """A results line per request line, with the reply the LLM test double gives that body
    (`completion_body` of its `default_content`), written a line at a time in reverse
    order (a provider's results come in any order)."""
    offsets, offset = [], 0
    with batch.open("rb") as handle:
        for raw in handle:
            offsets.append(offset)
            offset += len(raw)
    with batch.open("rb") as source, results.open("w", encoding="utf-8") as target:
        for number, start in enumerate(reversed(offsets)):
            source.seek(start)
            request = json.loads(source.readline())
            body = completion_body(request["body"], default_content(request["body"]))
            line = {"id": f"batch_req_{number}", "custom_id": request["custom_id"],
                    "response": {"status_code": 200, "body": body}, "error": None}  # fmt: skip
            target.write(json.dumps(line, ensure_ascii=False) + "\n")


def ingest_peak_rss_kb(workdir, count: int, config) -> int:
    """The peak resident memory (KB) of `qadi regrade --ingest` of a results file with a
    line for each of `count` distinct answers (the batch file written by `--batch` first)."""
    answers, results, url = fresh_run(workdir, count, new_text_every=1)
    batch, replies = workdir / "batch.jsonl", workdir / "replies.jsonl"
    run_measured(workdir, regrade_args(answers, config, "--batch", str(batch)), url)
    write_batch_results(batch, replies)
    args = regrade_args(answers, config, "--ingest", str(replies), "--out", str(results))
    peak = run_measured(workdir, args, url)[0]
    check_results(results, count)
    return int(peak)


def assert_bounded(
    small: int,
    large: int,
    allowance_mb: float = 0.0,
    bound: float = BOUND_KB_PER_ANSWER,
    what: str = "peak RSS",
    sizes: tuple[int, int] = (SMALL, LARGE),
) -> None:
    """`what` (KB) at the larger of `sizes` (answers) exceeds that at the smaller by less than
    `bound` KB per extra answer, beyond `allowance_mb` that does not depend on the input."""
    fewer, more = sizes
    per_answer = (large - small - 1024 * allowance_mb) / (more - fewer)
    assert per_answer < bound, (
        f"{what} {small / 1024:.1f} MB at {fewer} answers, {large / 1024:.1f} MB at "
        f"{more}: {per_answer:.3f} KB per extra answer beyond {allowance_mb:.0f} MB "
        f"(bound {bound})"
    )


@pytest.mark.parametrize("measure", [peak_rss_kb, ingest_peak_rss_kb], ids=["live", "ingest"])
def test_regrade_memory_does_not_grow_with_its_input(tmp_path, llm_server, measure):
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    small = measure(tmp_path / "small", SMALL, config)
    large = measure(tmp_path / "large", LARGE, config)
    assert_bounded(small, large)
