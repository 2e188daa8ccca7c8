"""MIDAS Table 6 (issue 30 part 1): the GPT-4o judge against human scores, Kendall τ,
Spearman ρ and Pearson r, per task, with and without the idiom's meaning, reproduced by
`qadi calibrate` from a grades file and from judgments graded by the MIDAS rubrics once the
human grades are imported. Expected values come from scipy.stats on the fixture's numbers
(an implementation independent of qadi's contingency-table one), never from qadi.

The fixture (tests/data/midas_table6.csv, the grades interchange format) holds 8 items per
task, two human raters (their mean is the reference, as in qadi by default) and the judge in
both settings; its numbers are invented and ordered as the README's reading of Table 6
(sentence generation with meaning highest, without meaning lowest). By hand, one cell: for
sentence generation with the meaning, judge (3,2,1,3,1,1,3,2) against the human means
(3,2,1,2.5,2,1,3,1.5): deviations from the means 2 and 2 are (1,0,-1,1,-1,-1,1,0) and
(1,0,-1,.5,0,-1,1,-.5), so r = 4.5 / sqrt(6 · 4.5) = sqrt(3)/2 = 0.8660.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict

import pytest
from scipy import stats

from tests.conftest import ROOT, run_cli
from tests.integration.test_service_api import Service, service  # noqa: F401  (fixture)

FIXTURE = ROOT / "tests/data/midas_table6.csv"
JUDGES = {"gpt-4o-meaning": "✓", "gpt-4o-no-meaning": "✗"}
TASKS = ("sentence-generation", "machine-translation")


def expected_cells(path=FIXTURE) -> dict[tuple[str, str], tuple[float, float, float]]:
    """(task, meaning) -> (τ-b, ρ, r) by scipy, from the file as csv reads it."""
    humans, judges = defaultdict(list), defaultdict(dict)
    tasks = {}
    with open(path, encoding="utf-8") as lines:
        for row in csv.DictReader(lines):
            tasks[row["item_id"]] = row["task"]
            if row["rater_kind"] == "human":
                humans[row["item_id"]].append(float(row["score"]))
            else:
                judges[row["rater"]][row["item_id"]] = float(row["score"])
    cells = {}
    for judge, meaning in JUDGES.items():
        for task in TASKS:
            items = sorted(i for i in judges[judge] if tasks[i] == task)
            x = [judges[judge][i] for i in items]
            y = [sum(humans[i]) / len(humans[i]) for i in items]
            cells[(task, meaning)] = (
                stats.kendalltau(x, y).statistic,  # tau-b, scipy's default
                stats.spearmanr(x, y).statistic,
                stats.pearsonr(x, y).statistic,
            )
    return cells


def table6(report: dict, judge_for: dict[str, str], tasks=TASKS) -> dict:
    out = {}
    for judge, meaning in judge_for.items():
        for task in tasks:
            block = report["judges"][judge]["strata"][f"task={task}"]
            out[(task, meaning)] = tuple(
                block[m] for m in ("kendall_tau", "spearman_rho", "pearson_r")
            )
    return out


def test_table_6_from_a_grades_file(tmp_path):
    out = tmp_path / "table6.json"
    done = run_cli(
        "calibrate", str(FIXTURE), "--scale", "1-3", "--by", "task", "--out", str(out),
        "--bootstrap", "50",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    ours = table6(json.loads(out.read_text()), JUDGES)
    expected = expected_cells()
    assert ours.keys() == expected.keys()
    for cell, values in expected.items():
        assert ours[cell] == pytest.approx(values, abs=1e-9), cell
    assert ours[("sentence-generation", "✓")][2] == pytest.approx(3**0.5 / 2)  # by hand
    for task in TASKS:  # the paper's finding holds in the fixture, by construction
        assert all(a > b for a, b in zip(ours[(task, "✓")], ours[(task, "✗")], strict=True))


def test_table_6_from_midas_judgments_and_imported_human_grades(
    service,  # noqa: F811
    llm_server,
    migrated_db,
    tmp_path,
):
    """The judge grades through POST /judge with midas-sentence (meaning shown) and
    midas-sentence-no-meaning; the humans' grades are imported; calibrate reads both."""
    with open(FIXTURE, encoding="utf-8") as lines:
        rows = [r for r in csv.DictReader(lines) if r["task"] == "sentence-generation"]
    humans = tmp_path / "humans.csv"
    with open(humans, "w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(r for r in rows if r["rater_kind"] == "human")
    settings = (
        ("gpt-4o-meaning", "midas-sentence"),
        ("gpt-4o-no-meaning", "midas-sentence-no-meaning"),
    )
    for judge, rubric in settings:
        for row in (r for r in rows if r["rater"] == judge):
            llm_server.script({"content": json.dumps({"rating": int(row["score"])})})
            body = {
                "kind": "explanation",
                "prompt": f"idiom of {row['item_id']}",
                "reference": "its meaning",
                "response": f"a sentence for {row['item_id']}",
                "candidate_model": "Qwen/Qwen2.5-32B-Instruct",
                "rubric_id": rubric,
                "metadata": {"item_id": row["item_id"], "task": row["task"]},
            }
            assert service.post("/judge", json=body).status_code == 200
    env = {"QADI_DATABASE_URL": migrated_db}
    assert run_cli("grades", "import", str(humans), env=env).returncode == 0
    expected = expected_cells()
    for rubric, meaning in (("midas-sentence", "✓"), ("midas-sentence-no-meaning", "✗")):
        out = tmp_path / f"{rubric}.json"
        done = run_cli(
            "calibrate", "--from-db", "--rubric", rubric, "--by", "task", "--out", str(out),
            "--bootstrap", "50", env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        report = json.loads(out.read_text())
        assert report["scale"]["min"] == 1 and report["scale"]["max"] == 3  # from the rubric
        ours = table6(report, {"gpt-judge": meaning}, tasks=("sentence-generation",))
        assert ours[("sentence-generation", meaning)] == pytest.approx(
            expected[("sentence-generation", meaning)], abs=1e-9
        )
