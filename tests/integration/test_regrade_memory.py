"""`qadi regrade` holds memory bounded by its concurrency, not by its input (issue 39): the
answers are read as they are graded and each result goes to the database and --out as it
comes. Two runs, of 2,000 and 20,000 answers, in their own processes; the peak resident
memory of the larger may exceed the smaller's by less than 1 KB per extra answer (the code
before held every answer, request and result line: about 10 KB per answer).

To stay well under a minute, one answer in ten is new text and the other nine repeat one
graded earlier, so they are answered from the store (a cached result, the resume path) and
still each get a line in --out; the runs make 200 and 2,000 calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

from service.db.engine import upgrade
from tests.conftest import ROOT, judges_config_data

SMALL, LARGE = 2_000, 20_000
BOUND_KB_PER_ANSWER = 1.0
NEW_TEXT_EVERY = 10


def write_answers(path, count: int) -> None:
    """`count` answers with distinct ids; the text of answer i is that of i % (count / 10)."""
    distinct = count // NEW_TEXT_EVERY
    with path.open("w", encoding="utf-8") as handle:
        for i in range(count):
            line = {
                "item_id": f"a{i}",
                "prompt": "شنو معنى شكو؟",
                "response": f"answer {i % distinct}",
                "candidate_model": "Qwen/Qwen2.5-7B-Instruct",
            }
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")


def peak_rss_kb(workdir, count: int, config) -> int:
    """The peak resident memory (KB) of `qadi regrade` over `count` answers, in a fresh
    process and a fresh SQLite database; checks that every answer got its results line."""
    workdir.mkdir()
    url = f"sqlite:///{workdir / 'qadi.db'}"
    upgrade(url)
    answers, results = workdir / "answers.jsonl", workdir / "results.jsonl"
    write_answers(answers, count)
    command = [sys.executable, "-m", "service", "regrade", str(answers), "--rubric",
               "iraqi-linguistic-shaku-maku", "--judges", "gpt-judge", "--config",
               str(config), "--concurrency", "32", "--out", str(results)]  # fmt: skip
    env = {**os.environ, "QADI_DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
    with open(workdir / "output.txt", "w") as output:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=output, stderr=output)
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 0, (workdir / "output.txt").read_text()[-3000:]
    with results.open(encoding="utf-8") as handle:
        lines = [json.loads(line) for line in handle]
    assert len(lines) == count and {line["status"] for line in lines} == {"ok"}
    assert len({line["item_id"] for line in lines}) == count
    return usage.ru_maxrss  # KB on Linux


def test_regrade_memory_does_not_grow_with_its_input(tmp_path, llm_server):
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    small = peak_rss_kb(tmp_path / "small", SMALL, config)
    large = peak_rss_kb(tmp_path / "large", LARGE, config)
    per_answer = (large - small) / (LARGE - SMALL)
    assert per_answer < BOUND_KB_PER_ANSWER, (
        f"peak RSS {small / 1024:.0f} MB at {SMALL} answers, {large / 1024:.0f} MB at "
        f"{LARGE}: {per_answer:.2f} KB per extra answer (bound {BOUND_KB_PER_ANSWER})"
    )
