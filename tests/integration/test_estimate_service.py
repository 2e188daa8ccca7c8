"""`qadi estimate`, `qadi sme queue`, `POST /estimates` and the nightly report's estimate."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from fastapi.testclient import TestClient
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy import stats

from calibration.formats.interchange import read_grades
from service.app import create_app
from service.settings import Settings
from tests.conftest import run_cli as qadi
from tests.integration.test_calibration_service import NONE_MET, grade_items
from tests.perf.bench_estimate import synthetic_records, write_csv


@pytest.fixture(scope="module")
def grades_file(tmp_path_factory):
    return write_csv(synthetic_records(), tmp_path_factory.mktemp("est") / "grades.csv")


def grade(item, rater, kind, score, **attrs):
    return {"item_id": item, "rater": rater, "rater_kind": kind, "score": score, **attrs}


def _arrays(records, judge, model):
    """Y (mean of the SMEs), f and f~ for one judge and candidate model, by hand."""
    humans, scores = {}, {}
    for r in records:
        if r["candidate_model"] != model:
            continue
        if r["rater_kind"] == "human":
            humans.setdefault(r["item_id"], []).append(r["score"])
        elif r["rater"] == judge:
            scores[r["item_id"]] = r["score"]
    labelled = sorted(i for i in scores if i in humans)
    y = np.array([np.mean(humans[i]) for i in labelled])
    f = np.array([scores[i] for i in labelled])
    return y, f, np.array([scores[i] for i in sorted(scores) if i not in humans])


def test_cli_writes_the_estimate_json_markdown_and_html(grades_file, tmp_path):
    options = "--scale 1-5 --by candidate_model --compare model-a,model-b --cluster prompt"
    files = [f"--{flag}={tmp_path}/e.{ext}" for flag, ext in (("out", "json"), ("md", "md"))]
    files.append(f"--html={tmp_path}/e.html")
    done = qadi("estimate", str(grades_file), *options.split(), "--target-halfwidth=0.1", *files)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "e.json").read_text())
    assert report["alpha"] == 0.05 and len(report["judges"]) == 6
    judge = report["judges"]["judge0"]
    assert set(judge["strata"]) == {f"candidate_model=model-{m}" for m in "abcd"}
    keys = {
        "estimate",
        "ci",
        "n_labelled",
        "n_unlabelled",
        "lambda",
        "effective_n",
        "judge_only",
        "human_only",
        "budget",
    }
    assert keys <= set(judge["overall"]) and keys <= set(judge["strata"]["candidate_model=model-c"])
    assert judge["overall"]["n_labelled"] + judge["overall"]["n_unlabelled"] == 700
    # a stratum against ppi_py on the same items (each prompt has one answer per model, so
    # clustering by prompt inside one model changes nothing): qadi cross-fits λ and uses t,
    # so the estimate is ppi_py's to a small share of the half-width and the interval a bit
    # wider; the human-only interval is scipy's t interval exactly
    y, f, f_unl = _arrays(synthetic_records(), "judge0", "model-c")
    block = judge["strata"]["candidate_model=model-c"]
    _near_ppi_py(block, y, f, f_unl)
    expected = stats.t.interval(0.95, len(y) - 1, loc=y.mean(), scale=stats.sem(y))
    assert block["human_only"]["ci"] == pytest.approx(list(expected), abs=1e-9)
    assert block["reliable"] and block["df"] == pytest.approx(len(y) - 1, abs=3)
    compare = judge["compare"]
    assert (compare["a"], compare["b"], compare["paired_on"]) == (
        "candidate_model=model-a",
        "candidate_model=model-b",
        "prompt",
    )
    assert compare["shared_clusters"] == 175
    a, b = judge["strata"]["candidate_model=model-a"], judge["strata"]["candidate_model=model-b"]
    assert compare["estimate"] == pytest.approx(a["estimate"] - b["estimate"])
    html = (tmp_path / "e.html").read_text()
    assert html.count('src="data:image/png;base64,') == 5  # overall + four strata
    markdown = (tmp_path / "e.md").read_text()
    assert "## candidate_model=model-a" in markdown and "## Label budget" in markdown
    assert "## Differences" in markdown and "judge0" in done.stderr
    assert "Student t intervals" in markdown and "(z," not in markdown
    assert "Bell-McCaffrey" in markdown and "Student t intervals" in html


def _near_ppi_py(block, y, f, f_unl) -> None:
    lo, hi = (float(np.squeeze(v)) for v in ppi_mean_ci(y, f, f_unl, alpha=0.05))
    half = (hi - lo) / 2
    assert abs(block["estimate"] - float(np.squeeze(ppi_mean_pointestimate(y, f, f_unl)))) < 0.1 * half
    # ppi_py's interval uses z; qadi's t on its df: the widths differ by that quantile ratio,
    # up to the HC2 variance and the cross-fitted λ (a few percent)
    ratio = (block["ci"][1] - block["ci"][0]) / (hi - lo)
    assert ratio == pytest.approx(stats.t.ppf(0.975, block["df"]) / stats.norm.ppf(0.975), rel=0.03)


def test_pairing_on_shared_prompts_narrows_a_difference(tmp_path):
    """Two models answer the same prompts; the prompt effect is shared, so the paired
    difference is far tighter than the one that treats the samples as independent."""
    rng = np.random.default_rng(4)
    records = []
    for p in range(120):
        effect = rng.normal(0, 1.5)
        for model, shift in (("A", 0.3), ("B", 0.0)):
            item, truth = f"{model}{p}", 3 + effect + shift + rng.normal(0, 0.2)
            attrs = {"candidate_model": model, "prompt": f"p{p}"}
            if p % 3 == 0:
                records.append(grade(item, "sme", "human", truth, **attrs))
            records.append(grade(item, "J", "judge", truth - 0.5 + rng.normal(0, 0.3), **attrs))
    grades = write_csv(records, tmp_path / "g.csv")
    widths = {}
    for extra in ([], ["--cluster", "prompt"]):
        out = tmp_path / f"e{len(extra)}.json"
        done = qadi(
            "estimate",
            str(grades),
            "--by",
            "candidate_model",
            "--compare",
            "A,B",
            *extra,
            "--out",
            str(out),
        )
        assert done.returncode == 0, done.stderr
        ci = json.loads(out.read_text())["judges"]["J"]["compare"]["ci"]
        widths[bool(extra)] = ci[1] - ci[0]
    assert widths[True] < 0.5 * widths[False]


def test_too_few_clusters_are_printed_as_unreliable_everywhere(tmp_path):
    """Labels in 3 prompts (< 5): the interval is given, marked unreliable with the reason in
    the JSON, and said so in the CLI summary, the Markdown and the HTML."""
    rng = np.random.default_rng(9)
    records = []
    for p in range(3):
        for k in range(6):
            item, value = f"p{p}-{k}", rng.normal(3, 1)
            if k < 3:
                records.append(grade(item, "sme", "human", value, prompt=f"p{p}"))
            records.append(grade(item, "J", "judge", value + rng.normal(0, 0.5), prompt=f"p{p}"))
    grades = write_csv(records, tmp_path / "g.csv")
    outputs = [f"--out={tmp_path}/e.json", f"--md={tmp_path}/e.md", f"--html={tmp_path}/e.html"]
    done = qadi("estimate", str(grades), "--cluster", "prompt", *outputs)
    assert done.returncode == 0, done.stderr
    block = json.loads((tmp_path / "e.json").read_text())["judges"]["J"]["overall"]
    assert block["ci"] is not None and block["reliable"] is False
    assert "only 3 clusters hold the labels" in block["unreliable"]
    assert "unreliable" in done.stderr and "⚠ unreliable" in done.stderr
    markdown = (tmp_path / "e.md").read_text()
    assert "⚠ unreliable" in markdown and "**Unreliable:** J, overall, PPI" in markdown
    assert "Unreliable: J, overall, PPI" in (tmp_path / "e.html").read_text()


def test_cli_refuses_bad_arguments_naming_them(grades_file, tmp_path):
    out = str(tmp_path / "e.json")
    cases = {
        ("--alpha", "1.5"): "--alpha",
        ("--compare", "model-a,model-b"): "compare: needs a `by`",
        ("--by", "candidate_model", "--compare", "model-a,zzz"): "['zzz'] not among",
        ("--level", "nominal"): "--level: nominal labels have no mean",
        ("--target-halfwidth", "-1"): "--target-halfwidth",
        ("--reference", "nobody"): "reference: 'nobody'",
    }
    for args, message in cases.items():
        done = qadi("estimate", str(grades_file), *args, "--out", out)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,rater,rater_kind,score\ni1,a,robot,3\n")
    assert "row 2: rater_kind" in qadi("estimate", str(bad), "--out", out).stderr
    for value, message in (("0", "greater than 0"), ("2", "less than or equal to 1")):
        bad.write_text(f"item_id,rater,rater_kind,score,inclusion_prob\ni1,a,human,3,{value}\n")
        done = qadi("estimate", str(bad), "--out", out)
        assert done.returncode == 2 and f"row 2: inclusion_prob: Input should be {message}" in done.stderr
    bad.write_text("item_id,rater,rater_kind,score,inclusion_prob\ni1,a,human,3,0.2\ni1,b,human,4,0.5\n")
    done = qadi("estimate", str(bad), "--out", out)
    assert done.returncode == 2 and "item i1: inclusion_prob is both 0.2 and 0.5" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    queue = qadi("sme", "queue", str(bad), "--n", "3", "--out", str(tmp_path / "q.csv"))
    assert queue.returncode == 2 and "inclusion_prob is both" in queue.stderr


def _segments(rng, labelled_per_segment: dict[str, int], size: int = 200) -> list[dict]:
    """Y ~ N(3, 1) (thin) or N(4, 1) (thick), judge = Y + N(0, 1); the first k labelled."""
    records = []
    for stratum, labelled in labelled_per_segment.items():
        for i in range(size):
            item, truth = f"{stratum}{i}", rng.normal(3 if stratum == "thin" else 4, 1)
            attrs = {"segment": stratum}
            if i < labelled:
                records.append(grade(item, "sme", "human", truth, **attrs))
            records.append(grade(item, "J", "judge", truth + rng.normal(0, 1), **attrs))
    return records


def test_sme_queue_fills_the_widest_stratum_with_random_unlabelled_items(tmp_path):
    # "thin" has 1 labelled item of 200, "thick" 100 of 200. The floor (5) gives thin 4 first;
    # thick, today: λ ≈ 0.25, half-width ≈ 0.17; thin has no judge interval yet (one label),
    # so its stand-in t_{n−1}·√(Var Y / n) with Var Y ≈ 1.2 is still ≈ 0.35 > 0.17 after 40
    # more labels: all 40 go to thin, each with inclusion_prob (1 + 40) / 200 = 0.205.
    rng = np.random.default_rng(0)
    records = _segments(rng, {"thin": 1, "thick": 100})
    grades = write_csv(records, tmp_path / "g.csv")
    args = ["--n", "40", "--by", "segment", "--out", str(tmp_path / "q.csv")]
    done = qadi("sme", "queue", str(grades), *args)
    assert done.returncode == 0, done.stderr
    assert "segment=thin" in done.stderr and "0.205" in done.stderr  # the per-stratum table
    with (tmp_path / "q.csv").open(encoding="utf-8-sig") as handle:
        queued = list(csv.DictReader(handle))
    assert len(queued) == 40 and {r["segment"] for r in queued} == {"thin"}
    assert {(r["inclusion_prob"], r["inclusion_stratum"]) for r in queued} == {
        ("0.205", "segment=thin")
    }
    labelled = {"thin0"} | {f"thick{i}" for i in range(100)}
    assert not labelled & {r["item_id"] for r in queued}
    assert all(r["rater"] == "" and r["score"] == "" and r["rater_kind"] == "human" for r in queued)
    # random inside the stratum, not the first 40 by id
    assert {r["item_id"] for r in queued} != {f"thin{i}" for i in range(1, 41)}
    # an SME fills the sheet in, and it reads back as interchange grades, probability kept
    for r in queued:
        r["rater"], r["score"] = "sme2", "4"
    filled = write_csv(queued, tmp_path / "filled.csv")
    rows = read_grades(filled)
    assert len(rows) == 40 and {r.inclusion_prob for r in rows} == {0.205}
    assert {r.attributes["inclusion_stratum"] for r in rows} == {"segment=thin"}
    # a second round over other strata is refused (their probabilities would not combine)
    appended = write_csv([*queued, *records], tmp_path / "all.csv")
    other = qadi("sme", "queue", str(appended), "--n", "5", "--out", str(tmp_path / "q2.csv"))
    assert other.returncode == 2 and "--by: earlier queue rounds drew labels by" in other.stderr


def _fill(queued: list[dict], truth: dict[str, float]) -> list[dict]:
    return [{**r, "rater": "sme-q", "score": truth[r["item_id"]]} for r in queued]


def test_queue_then_estimate_weights_the_labels_by_their_design(tmp_path):
    """Two strata with different means; 10 labels in thick, 2 in thin, then a queue of 60
    by segment, which sends most to thin (noisier, so wider). Appended to the grades, the
    labels over-represent thin (its mean 3 vs 4);
    the overall estimate weights each stratum by its judged items, the unweighted one does
    not. The design block names the strata and their probabilities."""
    rng = np.random.default_rng(2)
    truth = {}
    records = []
    for stratum, labelled, size, mean, noise in (("thin", 2, 100, 3.0, 1.0), ("thick", 10, 400, 4.0, 0.3)):
        for i in range(size):
            item, value = f"{stratum}{i}", rng.normal(mean, 2 * noise)
            truth[item] = value
            attrs = {"segment": stratum}
            if i < labelled:
                records.append(grade(item, "sme", "human", value, **attrs))
            judged = value + 0.5 + rng.normal(0, noise)
            records.append(grade(item, "J", "judge", judged, **attrs))
    grades = write_csv(records, tmp_path / "g.csv")
    done = qadi("sme", "queue", str(grades), "--n", "60", "--by", "segment", "--out",
                str(tmp_path / "q.csv"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    with (tmp_path / "q.csv").open(encoding="utf-8-sig") as handle:
        queued = _fill(list(csv.DictReader(handle)), truth)
    appended = write_csv([*queued, *records], tmp_path / "all.csv")
    out = tmp_path / "e.json"
    assert qadi("estimate", str(appended), "--out", str(out)).returncode == 0
    report = json.loads(out.read_text())
    design = report["design"]
    assert design["weights"].startswith("1/π with π = labelled share of each stratum of segment")
    shares = {k: v["labelled"] / v["items"] for k, v in design["strata"].items()}
    assert {k: v["inclusion_prob"] for k, v in design["strata"].items()} == pytest.approx(shares)
    # every queued item labelled (recorded = present); the 12 earlier labels carry no
    # inclusion_prob: the one warning is that the design is mixed
    assert [w.split(":")[0] for w in design["warnings"]] == ["mixed design"]
    assert "12 labelled item(s) in queue strata carry no inclusion_prob" in design["warnings"][0]
    block = report["judges"]["J"]["overall"]
    assert "weighted by 1/inclusion_prob" in block["method"]
    # the human-only mean is the stratified mean: 0.2 · mean(thin labels) + 0.8 · mean(thick)
    labels = {r["item_id"]: float(r["score"]) for r in [*records, *queued] if r["rater_kind"] == "human"}
    thin = np.mean([v for k, v in labels.items() if k.startswith("thin")])
    thick = np.mean([v for k, v in labels.items() if k.startswith("thick")])
    assert block["human_only"]["estimate"] == pytest.approx(0.2 * thin + 0.8 * thick)
    assert np.mean(list(labels.values())) < block["human_only"]["estimate"] - 0.1


@pytest.fixture
def client(migrated_db, llm_server, tmp_path):
    import yaml

    from tests.conftest import judges_config_data

    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    app = create_app(Settings(database_url=migrated_db, judges_config=path, auth="off"))
    return TestClient(app)


def test_api_inline_grades_match_the_cli(client, grades_file, tmp_path):
    body = {"grades": synthetic_records(), "by": ["candidate_model"], "target_halfwidth": 0.2}
    answer = client.post("/estimates", json=body)
    assert answer.status_code == 200, answer.text
    done = qadi(
        "estimate",
        str(grades_file),
        "--by",
        "candidate_model",
        "--target-halfwidth",
        "0.2",
        "--out",
        str(tmp_path / "e.json"),
    )
    assert done.returncode == 0, done.stderr
    assert answer.json()["judges"] == json.loads((tmp_path / "e.json").read_text())["judges"]
    html = client.post("/estimates", json=body, headers={"Accept": "text/html"})
    assert html.headers["content-type"].startswith("text/html") and "<section" in html.text
    md = client.post("/estimates", json=body, headers={"Accept": "text/markdown"})
    assert md.text.startswith("# Judge-corrected scores")


def test_api_uses_the_database_grades(client):
    records = synthetic_records(n_items=80, n_labelled=30, n_judges=2)
    assert client.post("/grades", json=records).status_code in (200, 201)
    answer = client.post("/estimates", json={"by": ["candidate_model"]})
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert report["inputs"]["source"] == "database"
    block = report["judges"]["judge1"]["overall"]
    assert (block["n_labelled"], block["n_unlabelled"]) == (30, 50)
    y, f, f_unl = (
        np.concatenate(parts)
        for parts in zip(
            *(_arrays(records, "judge1", m) for m in ("model-a", "model-b", "model-c", "model-d")),
            strict=True,
        )
    )
    _near_ppi_py(block, y, f, f_unl)


def test_inclusion_probabilities_survive_the_database_and_weight_its_estimate(client):
    """Queued labels imported by POST /grades keep inclusion_prob (a column of their own)
    and inclusion_stratum; GET /grades gives them back, in JSON and CSV; POST /estimates over
    the database weights by them like the file does."""
    rng = np.random.default_rng(7)
    records = []
    for stratum, size, labelled, mean in (("a", 40, 20, 2.0), ("b", 160, 8, 4.0)):
        for i in range(size):
            item, value = f"{stratum}{i}", rng.normal(mean, 0.5)
            attrs = {"segment": stratum}
            records.append(grade(item, "J", "judge", value + rng.normal(0, 0.3), **attrs))
            if i < labelled:
                probability = {"inclusion_prob": labelled / size}
                attrs = {**attrs, "inclusion_stratum": f"segment={stratum}"}
                records.append(grade(item, "sme", "human", value, **probability, **attrs))
    assert client.post("/grades", json=records).status_code in (200, 201)
    stored = client.get("/grades", params={"item_id": "a3", "rater": "sme"}).json()["items"]
    assert stored[0]["inclusion_prob"] == 0.5
    assert stored[0]["inclusion_stratum"] == "segment=a"
    exported = list(csv.DictReader(io.StringIO(client.get("/grades?format=csv").text)))
    assert {r["inclusion_prob"] for r in exported if r["item_id"] == "b1"} == {"0.05", ""}
    from_db = client.post("/estimates", json={}).json()
    inline = client.post("/estimates", json={"grades": records}).json()
    assert from_db["design"]["strata"] == inline["design"]["strata"]
    assert from_db["judges"]["J"] == inline["judges"]["J"]
    human = from_db["judges"]["J"]["overall"]["human_only"]["estimate"]
    labels = [r for r in records if r["rater_kind"] == "human"]
    means = {s: np.mean([r["score"] for r in labels if r["segment"] == s]) for s in "ab"}
    assert human == pytest.approx(0.2 * means["a"] + 0.8 * means["b"])


def test_api_errors_name_the_field(client):
    rows = synthetic_records(n_items=20, n_labelled=8, n_judges=1)
    cases = [
        ({"grades": rows, "alpha": 2}, ["body", "alpha"]),
        (
            {"grades": rows, "by": ["candidate_model"], "compare": ["model-a", "x"]},
            ["body", "compare"],
        ),
        (
            {"grades": [{"item_id": "i", "rater": "a", "rater_kind": "robot", "score": 1}]},
            ["body", "grades"],
        ),
        ({"grades": rows, "reference": "nobody"}, ["body", "reference"]),
        ({"grades": rows, "color": "red"}, ["body", "color"]),
        ({"grades": [r for r in rows if r["rater_kind"] == "judge"]}, ["body", "grades"]),
        ({"grades": rows, "budget_quantile": 1.0}, ["body", "budget_quantile"]),
        ({"grades": [{**rows[0], "inclusion_prob": 0}, *rows[1:]]}, ["body", "grades"]),
        ({"grades": [{**rows[0], "inclusion_prob": "half"}, *rows[1:]]}, ["body", "grades"]),
    ]
    for body, loc in cases:
        answer = client.post("/estimates", json=body)
        assert answer.status_code == 422, (body, answer.text)
        assert answer.json()["detail"][0]["loc"] == loc, answer.text
    refused = client.post("/estimates", json={"grades": [{**rows[0], "inclusion_prob": 1.5}]})
    assert refused.json()["detail"][0]["msg"].startswith("row 1: inclusion_prob: ")
    nan = client.post(
        "/estimates",
        content=b'{"grades": [], "scale_min": NaN, "scale_max": 5}',
        headers={"content-type": "application/json"},
    )
    assert nan.status_code == 422


def test_nightly_report_carries_the_estimate(client, llm_server, migrated_db, tmp_path):
    # 12 items graded by the judge (every criterion unmet: score 0); SMEs graded items 0-5
    # with 0 and 16.7. The judge is constant, so λ = 0 and the estimate is the human mean:
    # items 0..5 have SME scores {0, 16.7} in some order → each item's mean 8.35 → 8.35.
    smes = [
        grade(f"item{i}", f"sme{k}", "human", 16.7 * ((i + k) % 2))
        for i in range(6)
        for k in (0, 1)
    ]
    assert client.post("/grades", json=smes).status_code in (200, 201)
    grade_items(client, llm_server, NONE_MET)
    nightly = ["report", "nightly", "--rubric", "iraqi-linguistic-shaku-maku", "--bootstrap", "50"]
    done = qadi(*nightly, f"--out-dir={tmp_path}/r", env={"QADI_DATABASE_URL": migrated_db})
    assert done.returncode == 0, done.stderr
    report = json.loads(next((tmp_path / "r").glob("nightly-*.json")).read_text())
    block = report["estimate"]["judges"]["gpt-judge"]["overall"]
    assert (block["n_labelled"], block["n_unlabelled"], block["lambda"]) == (6, 6, 0.0)
    assert block["estimate"] == pytest.approx(8.35)
    assert "dialect=iraqi" in report["estimate"]["judges"]["gpt-judge"]["strata"]
    assert "Judge-corrected scores" in next((tmp_path / "r").glob("nightly-*.md")).read_text()
    html = next((tmp_path / "r").glob("nightly-*.html")).read_text()
    assert html.index("Judge-corrected scores") < html.index("</body>")


def test_generated_bodies_never_make_it_fail(client):
    """Hostile bodies generated from the OpenAPI schema of POST /estimates (derandomized):
    every answer is 200 or 422, never 500."""
    import schemathesis
    from hypothesis import HealthCheck, given, settings

    schema = schemathesis.openapi.from_asgi("/openapi.json", client.app)
    operation = next(op.ok() for op in schema.get_all_operations() if op.ok().path == "/estimates")

    @given(case=operation.as_strategy())
    @settings(
        max_examples=60,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    def check(case) -> None:
        response = case.call()
        assert response.status_code in (200, 422), (response.status_code, response.text[:300])

    check()
