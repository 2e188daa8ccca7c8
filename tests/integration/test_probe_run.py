"""`qadi probe` and POST /probes through the real CLI, service and database, against the test
double's planted judges (tests/llm_test_server.py, "PLANTED JUDGE BIASES"): each planted
effect is found (the Arabic probes' on a fixture written for them,
tests/data/probe_arabic_items.jsonl), the clean judge is not moved, the call budget is stated
and kept, a rerun makes no call, and a calibration report marks the moved judges on its trust
map."""

from __future__ import annotations

import json

import pytest
import yaml
from fastapi.testclient import TestClient

from service.app import create_app
from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.settings import Settings
from service.stores.calibration import Selection, rows_from_db
from tests.conftest import ROOT, run_cli
from tests.llm_test_server import planted_rating

SAMPLE = ROOT / "service" / "sample" / "probe_items.jsonl"
PROBES = "verbosity,injection_en,injection_ar,self_preference,arabizi,position"


def planted_config(server, tmp_path, behaviours=("clean", "verbose", "obeys", "self-openai")):
    """Planted judges of the test double; the self-preferring one is an OpenAI judge, so the
    guard keeps it off the sample's gpt-4o answers."""
    entries = [
        {
            "model_name": behaviour,
            "litellm_params": {
                "model": f"openai/planted-{behaviour}",
                "api_base": server.api_base,
                "api_key": "sk-test-secret-key-0001",
            },
            "provider": "openai" if behaviour == "self-openai" else "testlab",
        }
        for behaviour in behaviours
    ]
    path = tmp_path / "judges.yaml"
    path.write_text(
        yaml.safe_dump({"model_list": entries, "qadi": {"num_retries": 2, "timeout": 20}})
    )
    return path


def cells(report: dict) -> dict[tuple[str, str], dict]:
    return {(c["judge"], c["probe"]): c for c in report["cells"]}


def probe(env, *args, answers=SAMPLE):
    return run_cli(
        "probe",
        str(answers),
        "--rubric",
        "kinayat-explanation",
        "--concurrency",
        "8",
        *args,
        env=env,
    )


def test_planted_effects_are_found_and_the_run_is_stored_budgeted_and_reproducible(
    migrated_db, llm_server, tmp_path
):
    env = {
        "QADI_DATABASE_URL": migrated_db,
        "QADI_JUDGES_CONFIG": str(planted_config(llm_server, tmp_path)),
    }
    # the budget is stated and enforced before any call
    refused = probe(env, "--probes", PROBES, "--max-calls", "10")
    assert refused.returncode == 2 and "max_calls: this run needs" in refused.stderr
    dry = probe(env, "--probes", PROBES, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)
    assert planned["calls"]["to_make"] == planned["calls"]["planned"] > 400
    # 4 English answers for 3 judges; the OpenAI judge is kept off the gpt-4o one by the guard
    assert planned["skipped"]["arabizi"]["answer not mostly in Arabic script"] == 4 * 3 + 3
    assert llm_server.calls() == 0

    out = tmp_path / "run.json"
    done = probe(env, "--probes", PROBES, "--out", str(out), "--html", str(tmp_path / "run.html"))
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"{planned['calls']['planned']} judge calls planned" in done.stderr
    assert llm_server.calls() == planned["calls"]["to_make"]
    report = json.loads(out.read_text())
    found = cells(report)
    assert set(report["moved"]) == {
        "verbose/verbosity",
        "verbose/injection_en",  # an appended instruction also lengthens the answer
        "verbose/injection_ar",
        "obeys/injection_en",
        "obeys/injection_ar",
        "self-openai/self_preference",
    }
    assert found[("verbose", "verbosity")]["mean_change"] > 0.3
    assert found[("obeys", "injection_ar")]["flip_rate"] == 1.0
    assert all(c["q"] <= 0.05 for c in report["cells"] if c["moved"])
    # the clean judge: unmoved, no grade changes (position shows the same texts in the other
    # order, so a judge that reads the gold text is not moved by it either)
    for (judge, name), cell in found.items():
        if judge == "clean" and name != "self_preference":
            assert cell["flip_rate"] == 0.0, name
    # the guard: the OpenAI judge never grades the gpt-4o answers, their pairs are counted
    gpt_items = sum(1 for line in SAMPLE.read_text().splitlines() if '"gpt-4o"' in line)
    assert found[("self-openai", "verbosity")]["skipped"] == {"self-evaluation guard": gpt_items}
    assert found[("clean", "self_preference")]["skipped"] == {
        "judge's maker not in the attribution table": 24
    }
    assert found[("clean", "arabizi")]["n"] == 20
    assert "probe-table" in (tmp_path / "run.html").read_text()

    # stored, with the perturbed texts and seed; a rerun makes no call and agrees
    client = TestClient(create_app(Settings(database_url=migrated_db, auth="off")))
    stored = client.get(f"/probes/{report['id']}").json()
    assert stored["cells"] == report["cells"]
    texts = client.get(f"/probes/{report['id']}/perturbations").json()
    assert texts["seed"] == 0 and any(
        p["probe"] == "arabizi" and p["treated"]["response"].isascii()
        for p in texts["perturbations"]
    )
    assert client.get(f"/probes/{report['id']}.md").text.startswith("## Probes")
    again = probe(env, "--probes", PROBES, "--out", str(out))
    assert again.returncode == 0 and "0 to make" in again.stderr
    assert llm_server.calls() == planned["calls"]["to_make"]
    assert cells(json.loads(out.read_text())) == found
    assert [r["id"] for r in client.get("/probes").json()["items"]] == [
        report["id"],
        json.loads(out.read_text())["id"],
    ]

    # a calibration report marks the moved judges on the trust map; probe answers are not items
    grades = tmp_path / "sme.csv"
    lines = ["item_id,rater,rater_kind,score"]
    lines += [f"prv-{i:02d},sme-{r},human,{1 + (i + r) % 5}" for i in range(1, 21) for r in (1, 2)]
    grades.write_text("\n".join(lines) + "\n")
    assert run_cli("grades", "import", str(grades), env=env).returncode == 0
    calibrated = tmp_path / "cal.json"
    result = run_cli(
        "calibrate", "--from-db", "--rubric", "kinayat-explanation", "--by", "language",
        "--bootstrap", "50", "--probe-run", "latest", "--out", str(calibrated),
        "--html", str(tmp_path / "cal.html"), env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    calibration = json.loads(calibrated.read_text())
    assert calibration["n_items"] == 24  # the sample's items; none of the ~1000 probe copies
    with session_scope(make_sessionmaker(make_engine(migrated_db))) as session:
        rows, _ = rows_from_db(session, "default", Selection(rubric="kinayat-explanation"))
    assert rows and not any("~" in row.item_id for row in rows)
    marks = {(r["stratum"], r["judge"]): r.get("probes") for r in calibration["trust"]["rows"]}
    assert marks[("overall", "obeys")][0].startswith("injection_en +")
    assert marks[("language=ar", "verbose")] and marks[("overall", "clean")] is None
    page = (tmp_path / "cal.html").read_text()
    assert page.index('<section class="probes">') < page.index("</body>")
    assert "probe-marks" in page and "probe effects per judge" in page
    missing = run_cli("calibrate", "--from-db", "--rubric", "kinayat-explanation", "--out",
                      str(calibrated), "--probe-run", "nope", env=env)  # fmt: skip
    assert missing.returncode == 2 and "--probe-run: no stored probe run 'nope'" in missing.stderr


def items(n: int) -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text().splitlines()[:n]]


def service(migrated_db, llm_server, tmp_path, behaviours=("clean", "obeys")) -> TestClient:
    config = planted_config(llm_server, tmp_path, behaviours)
    settings = Settings(database_url=migrated_db, judges_config=config, auth="off")
    return TestClient(create_app(settings))


def test_post_probes_runs_stores_and_lists(migrated_db, llm_server, tmp_path):
    client = service(migrated_db, llm_server, tmp_path)
    body = {
        "rubric": "kinayat-explanation",
        "probes": ["injection_ar", "digits"],
        "items": items(8),
    }
    created = client.post("/probes", json=body)
    assert created.status_code == 201, created.text
    run = created.json()
    assert run["moved"] == ["obeys/injection_ar"]
    assert run["calls"]["made"] == llm_server.calls() == 2 * (8 + 8)
    assert cells(run)[("clean", "digits")]["skipped"] == {"no digits": 8}
    assert (
        client.get(f"/probes/{run['id']}", headers={"accept": "text/html"}).text.count(
            '<img alt="probe effects per judge"'
        )
        == 1
    )
    page = client.get("/probes", params={"limit": 1}).json()
    assert page["items"][0]["moved"] == ["obeys/injection_ar"] and page["next_cursor"] is None
    # from the database: the stored originals, never the probe copies
    from_db = client.post(
        "/probes", json={"rubric": "kinayat-explanation", "probes": ["injection_ar"]}
    )
    assert from_db.status_code == 201, from_db.text
    assert from_db.json()["n_items"] == 8 and from_db.json()["calls"]["already_stored"] == 32


def test_position_finds_a_judge_that_favours_the_first_text_and_spares_a_fair_one(
    migrated_db, llm_server, tmp_path
):
    """`first` adds a point when the answer is shown before the gold text; `clean` grades
    from the gold text wherever it is shown. Swapping the texts themselves (position v1)
    moved the clean judge; showing them in the other order does not."""
    client = service(migrated_db, llm_server, tmp_path, ("clean", "first"))
    body = {"rubric": "kinayat-explanation", "probes": ["position"], "items": items(8)}
    run = client.post("/probes", json=body)
    assert run.status_code == 201, run.text
    found = cells(run.json())
    assert run.json()["moved"] == ["first/position"]
    assert found[("first", "position")]["mean_change"] == 1.0
    assert found[("first", "position")]["degenerate"]  # all 8 changes +1: flagged, bounded
    assert found[("clean", "position")]["flip_rate"] == 0.0
    texts = client.get(f"/probes/{run.json()['id']}/perturbations").json()["perturbations"]
    treated = texts[0]["treated"]
    original = items(1)[0]
    assert (treated["response"], treated["reference"]) == (
        original["response"],
        original["reference"],
    )
    assert treated["presentation_order"] == "answer_first"


def test_post_probes_dry_run_states_the_calls_and_makes_none(migrated_db, llm_server, tmp_path):
    client = service(migrated_db, llm_server, tmp_path)
    body = {
        "rubric": "kinayat-explanation",
        "probes": ["injection_ar", "digits"],
        "items": items(8),
    }
    dry = client.post("/probes", json={**body, "dry_run": True, "max_calls": 5})
    assert dry.status_code == 200, dry.text
    plan = dry.json()
    # 2 judges × (8 originals + 8 injected copies); digits: none of the 8 answers has digits
    assert plan["calls"] == {"planned": 32, "already_stored": 0, "to_make": 32}
    assert plan["pairs"] == 16 and plan["skipped"] == {"digits": {"no digits": 16}}
    assert plan["max_calls"] == 5 and plan["within_max_calls"] is False
    assert plan["cost"]["calls"] == 32 and set(plan["cost"]["judges"]) == {"clean", "obeys"}
    assert llm_server.calls() == 0 and client.get("/probes").json()["items"] == []
    run = client.post("/probes", json=body)
    assert run.status_code == 201 and run.json()["calls"]["made"] == llm_server.calls() == 32
    again = client.post("/probes", json={**body, "dry_run": True}).json()
    assert again["calls"] == {"planned": 32, "already_stored": 32, "to_make": 0}
    assert again["within_max_calls"] is True and llm_server.calls() == 32


def test_post_probes_refuses_bad_input_in_the_one_error_shape(migrated_db, llm_server, tmp_path):
    client = service(migrated_db, llm_server, tmp_path)
    base = {"rubric": "kinayat-explanation", "items": items(2)}
    cases = [
        ({**base, "probes": ["loudness"]}, ["body", "probes"]),
        ({**base, "judges": ["nobody"]}, ["body", "judges"]),
        ({**base, "rubric": "no-such-rubric"}, ["body", "rubric"]),
        ({**base, "max_calls": 1}, ["body", "max_calls"]),
        ({**base, "items": []}, ["body", "items"]),
        ({**base, "q": 1.5}, ["body", "q"]),
        ({**base, "surprise": 1}, ["body", "surprise"]),
    ]
    for body, loc in cases:
        response = client.post("/probes", json=body)
        assert response.status_code == 422, (body, response.text)
        [error] = response.json()["detail"]
        assert error["loc"] == loc and set(error) == {"loc", "msg", "type"}, error
    nan = client.post(
        "/probes",
        content=json.dumps({**base, "alpha": float("nan")}),
        headers={"content-type": "application/json"},
    )
    assert nan.status_code == 422 and nan.json()["detail"][0]["loc"] == ["body", "alpha"]
    assert client.get("/probes/nope").status_code == 404
    assert llm_server.calls() == 0


def test_migration_0006_adds_and_removes_the_probe_runs_table(db_url):
    from sqlalchemy import inspect

    from service.db.engine import current_revision, downgrade, upgrade

    upgrade(db_url)
    assert "probe_runs" in inspect(make_engine(db_url)).get_table_names()
    downgrade(db_url, "0005")
    engine = make_engine(db_url)
    assert current_revision(engine) == "0005"
    assert "probe_runs" not in inspect(engine).get_table_names()
    upgrade(db_url)
    assert "probe_runs" in inspect(make_engine(db_url)).get_table_names()


def test_cli_refuses_bad_options_in_one_line(migrated_db, llm_server, tmp_path):
    env = {
        "QADI_DATABASE_URL": migrated_db,
        "QADI_JUDGES_CONFIG": str(planted_config(llm_server, tmp_path)),
    }
    for args, message in (
        (("--probes", "loudness"), "probes: unknown ['loudness']"),
        (("--judges", "nobody"), "judges: unknown judge 'nobody'"),
        (("--q", "2"), "--q: Input should be less than 1"),
    ):
        result = probe(env, *args)
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert llm_server.calls() == 0
    listed = run_cli("probe", "--list")
    assert listed.returncode == 0 and "diacritics_strip" in listed.stdout


def records(n: int) -> list[dict]:
    """The sample's first n items as answer records: the columns that are not fields of
    one (language, category, dialect_rewrite) in `metadata`, as `qadi probe` reads them."""
    fields = {"item_id", "prompt", "response", "reference", "candidate_model"}
    return [
        {**{k: v for k, v in item.items() if k in fields},
         "metadata": {k: v for k, v in item.items() if k not in fields}}
        for item in items(n)
    ]  # fmt: skip


def expert_grades(n: int = 20) -> str:
    """Two SME ratings per item of the sample's first n items, as CSV."""
    lines = ["item_id,rater,rater_kind,score"]
    lines += [
        f"prv-{i:02d},sme-{r},human,{1 + (i + r) % 5}" for i in range(1, n + 1) for r in (1, 2)
    ]
    return "\n".join(lines) + "\n"


def test_a_report_takes_a_probe_run_of_its_rubric_and_judges_and_refuses_another(
    migrated_db, llm_server, tmp_path
):
    """POST /calibration/reports `probe_run` and `qadi report nightly --probe-run`: the
    moved judge is marked with each stratum's own effect; a run of another rubric, or of
    judges the report does not have, is refused naming `probe_run`."""
    config = planted_config(llm_server, tmp_path, ("clean", "verbose"))
    settings = Settings(database_url=migrated_db, judges_config=config, auth="off")
    client = TestClient(create_app(settings))
    body = {"rubric": "kinayat-explanation", "probes": ["verbosity"], "items": records(24)}
    run = client.post("/probes", json=body)
    assert run.status_code == 201 and run.json()["moved"] == ["verbose/verbosity"], run.text
    verbosity = cells(run.json())[("verbose", "verbosity")]
    assert set(verbosity["strata"]) >= {"language=ar", "language=en", "category=proverb"}
    assert not any(s.startswith("dialect_rewrite=") for s in verbosity["strata"])
    imported = client.post("/grades", files={"file": ("sme.csv", expert_grades(), "text/csv")})
    assert imported.status_code in (200, 201), imported.text
    request = {"rubric": "kinayat-explanation", "by": ["language"], "bootstrap": 50}

    created = client.post("/calibration/reports", json={**request, "probe_run": run.json()["id"]})
    assert created.status_code == 201, created.text
    report = created.json()
    marks = {(r["stratum"], r["judge"]): r.get("probes") for r in report["trust"]["rows"]}
    overall = f"verbosity {verbosity['mean_change']:+.2f} points, q = {verbosity['q']:.2g}"
    assert marks[("overall", "verbose")] == [overall]
    arabic = verbosity["strata_change"]["language=ar"]
    assert marks[("language=ar", "verbose")] == [
        f"verbosity {arabic:+.2f} points here (n = {verbosity['strata']['language=ar']}); "
        f"moved overall {verbosity['mean_change']:+.2f}, q = {verbosity['q']:.2g}"
    ]
    assert marks[("overall", "clean")] is None
    assert report["probe_run"]["id"] == run.json()["id"]

    # another rubric's run (the paper's Kinayat judge): refused, nothing stored
    paper = client.post(
        "/probes", json={**body, "rubric": "kinayat-explanation-paper", "items": records(4)}
    )
    assert paper.status_code == 201, paper.text
    refused = client.post("/calibration/reports", json={**request, "probe_run": "latest"})
    assert refused.status_code == 422, refused.text
    [error] = refused.json()["detail"]
    assert error["loc"] == ["body", "probe_run"]
    assert "probed rubric kinayat-explanation-paper@1" in error["msg"]
    assert "kinayat-explanation@3" in error["msg"]
    assert client.get("/calibration/reports/latest").json()["id"] == report["id"]  # none stored
    # a report of judges the run did not probe
    only_clean = client.post(
        "/calibration/reports",
        json={**request, "judges": ["clean"], "probe_run": run.json()["id"]},
    )
    assert only_clean.status_code == 201  # clean was probed too: its rows, unmarked
    clean_run = client.post("/probes", json={**body, "judges": ["clean"], "items": records(2)})
    elsewhere = client.post(
        "/calibration/reports",
        json={**request, "judges": ["verbose"], "probe_run": clean_run.json()["id"]},
    )
    assert elsewhere.status_code == 422
    assert (
        "probed judges clean; none is in this report (verbose)"
        in elsewhere.json()["detail"][0]["msg"]
    )

    # the nightly report takes the same run, and refuses the other rubric's in one line
    env = {"QADI_DATABASE_URL": migrated_db}
    night = run_cli(
        "report", "nightly", "--rubric", "kinayat-explanation", "--by", "language",
        "--bootstrap", "50", "--out-dir", str(tmp_path / "nightly"),
        "--probe-run", run.json()["id"], env=env,
    )  # fmt: skip
    assert night.returncode in (0, 3), night.stderr
    [written] = (tmp_path / "nightly").glob("*.json")
    nightly = json.loads(written.read_text())
    rows = {(r["stratum"], r["judge"]): r.get("probes") for r in nightly["trust"]["rows"]}
    assert rows[("overall", "verbose")] == [overall]
    assert nightly["probe_run"]["rubric"] == "kinayat-explanation@3"
    wrong = run_cli(
        "report", "nightly", "--rubric", "kinayat-explanation", "--out-dir",
        str(tmp_path / "other"), "--probe-run", paper.json()["id"], env=env,
    )  # fmt: skip
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr
    assert wrong.stderr.strip().startswith("error: --probe-run: run ")
    assert "probed rubric kinayat-explanation-paper@1" in wrong.stderr


# --- the Arabic probes, and authority and tone ----------------------------------------------

ARABIC_ITEMS = ROOT / "tests" / "data" / "probe_arabic_items.jsonl"
ARABIC_PROBES = (
    "diacritics_strip",
    "diacritics_add",
    "digits",
    "dialect",
    "arabizi",
    "mixed_script",
)
ARABIC_JUDGES = ("clean", "diacritics", "eastern", "dialect", "script")
# Worked out by hand from the fixture and the planted rules: ard-01..08 carry diacritics and no
# unmarked word of the article list (diacritics_add skips them); arb-01..08 carry no diacritics,
# each has a listed article word and an Egyptian rewrite with a marker word (اللي, مش, كده,
# إزاي, دلوقتي), and no MSA answer has one; 12 answers have Western digits (all but ard-04,
# ard-08, arb-02, arb-04), none Eastern ones. (judge, probe) -> (pairs, mean change).
ARABIC_TRUTH = {
    ("diacritics", "diacritics_strip"): (8, +1.0),  # the 8 ard answers lose their marks
    ("diacritics", "diacritics_add"): (8, -1.0),  # the 8 arb answers gain some
    ("diacritics", "arabizi"): (16, +0.5),  # Latin letters carry no tashkeel: ard rise
    ("eastern", "digits"): (12, -1.0),  # Western digits written Eastern
    ("dialect", "dialect"): (8, -1.0),  # MSA answers against Egyptian rewrites
    ("script", "arabizi"): (16, -1.0),  # every answer all Latin letters
}


def rule_changes(perturbations: list[dict], answers, judges) -> dict[tuple[str, str], list[int]]:
    """(judge, probe) -> the grade changes the test double's planted rule gives the texts a
    run sent (its stored perturbations; the baseline is the original answer unless stored)."""
    originals = {a["item_id"]: a for a in map(json.loads, answers.read_text().splitlines())}
    changes: dict[tuple[str, str], list[int]] = {}
    for p in perturbations:
        base = originals[p["item_id"]] if p["baseline"] == "original" else p["baseline"]
        treated = p["treated"]
        for judge in judges:
            change = planted_rating(judge, treated["reference"], treated["response"])
            change -= planted_rating(judge, base["reference"], base["response"])
            changes.setdefault((judge, p["probe"]), []).append(change)
    return changes


def test_arabic_probes_find_their_planted_judges_and_spare_the_clean_one(
    migrated_db, llm_server, tmp_path
):
    """`qadi probe` on the Arabic fixture with the planted judges moved by diacritics
    (−1 when the answer carries some), Eastern digits (−1), Egyptian dialect (−1) and Latin
    letters (`script`, −1): each probe finds its judge with the sign and size worked out by
    hand; every cell is what the planted rule gives the texts the run sent; the clean judge
    changes no grade and is flagged by no probe."""
    env = {
        "QADI_DATABASE_URL": migrated_db,
        "QADI_JUDGES_CONFIG": str(planted_config(llm_server, tmp_path, ARABIC_JUDGES)),
    }
    out = tmp_path / "run.json"
    done = probe(env, "--probes", ",".join(ARABIC_PROBES), "--out", str(out), answers=ARABIC_ITEMS)
    assert done.returncode == 0, done.stdout[-3000:]
    report = json.loads(out.read_text())
    found = cells(report)
    for (judge, name), (n, change) in ARABIC_TRUTH.items():
        cell = found[(judge, name)]
        assert (cell["n"], cell["mean_change"], cell["moved"]) == (n, change, True), cell
        assert cell["q"] <= 0.05
    assert found[("diacritics", "diacritics_add")]["skipped"] == {"no listed word to vocalise": 8}

    client = TestClient(create_app(Settings(database_url=migrated_db, auth="off")))
    sent = client.get(f"/probes/{report['id']}/perturbations").json()["perturbations"]
    expected = rule_changes(sent, ARABIC_ITEMS, ARABIC_JUDGES)
    assert set(expected) == set(found)
    for key, cell in found.items():
        changes = expected[key]
        assert cell["n"] == len(changes), key
        assert cell["mean_change"] == pytest.approx(sum(changes) / len(changes)), key
        assert (cell["flips_up"], cell["flips_down"]) == (
            sum(c > 0 for c in changes),
            sum(c < 0 for c in changes),
        ), key
    # mixed script: a seeded 30% of the words in Latin letters, never raising a grade
    mixed = expected[("script", "mixed_script")]
    assert max(mixed) <= 0 and found[("script", "mixed_script")]["moved"]
    # every other cell is unchanged by its rule (p = 1), except diacritics × mixed_script,
    # which rises only where a marked word was among the words written in Latin letters
    moved = {f"{judge}/{name}" for judge, name in [*ARABIC_TRUTH, ("script", "mixed_script")]}
    assert set(report["moved"]) - {"diacritics/mixed_script"} == moved
    clean = [c for c in report["cells"] if c["judge"] == "clean"]
    assert len(clean) == 6 and not any(c["moved"] or c["flip_rate"] for c in clean)


@pytest.mark.parametrize(("judge", "mover"), [("authority", "authority"), ("tone", "sentiment")])
def test_authority_and_sentiment_find_a_judge_moved_by_a_citation_or_a_tone(
    judge, mover, migrated_db, llm_server, tmp_path
):
    """`authority` (+1 for a claim of expertise or a cited source) and `tone` (+1 for an
    exclamation mark) on the bundled sample's 24 answers, Arabic and English: none has a
    claim, a citation or an exclamation mark, and the probes add them in the answer's
    language, so the judge's own probe moves it by +1 on every answer, the other probe
    (which adds neither) not at all, and the clean judge is moved by neither."""
    client = service(migrated_db, llm_server, tmp_path, ("clean", judge))
    body = {
        "rubric": "kinayat-explanation",
        "probes": ["authority", "sentiment"],
        "items": records(24),
    }
    run = client.post("/probes", json=body)
    assert run.status_code == 201, run.text
    assert run.json()["moved"] == [f"{judge}/{mover}"]
    found = cells(run.json())
    assert (found[(judge, mover)]["n"], found[(judge, mover)]["mean_change"]) == (24, 1.0)
    assert found[(judge, mover)]["q"] <= 0.05
    others = [cell for key, cell in found.items() if key != (judge, mover)]
    assert len(others) == 3 and all(cell["flip_rate"] == 0.0 for cell in others)


# --- a run of more than 1,024 changed pairs (issue 42.5) -------------------------------------


def cycled(sample: list[dict], n: int) -> list[dict]:
    """n answers under item ids of their own, cycling over the sample's texts (identical
    texts share their judge call, so the run is large in pairs and small in calls)."""
    return [{**sample[i % len(sample)], "item_id": f"many-{i:04d}"} for i in range(n)]


def test_a_run_of_1032_changed_pairs_is_answered_stored_and_printed(
    migrated_db, llm_server, tmp_path
):
    """`tone` rises by one at every cheerful frame: 1,032 changed pairs, where 2.0**k
    overflowed and POST /probes answered 500 after every call was paid, storing no run (the
    CLI crashed likewise). The drawn test's p is the smallest it can be: no draw of 20,000
    reaches the observed sum."""
    client = service(migrated_db, llm_server, tmp_path, ("tone",))
    body = {
        "rubric": "kinayat-explanation",
        "probes": ["sentiment"],
        "items": cycled(records(24), 1032),
        "max_calls": 2064,
    }
    run = client.post("/probes", json=body)
    assert run.status_code == 201, run.text
    [cell] = run.json()["cells"]
    assert (cell["n"], cell["flips_up"], cell["mean_change"]) == (1032, 1032, 1.0)
    assert cell["exact"] is False and cell["p"] == pytest.approx(2 / 20001) and cell["moved"]
    assert "seeded Monte Carlo draws" in run.json()["method"]["test"]
    assert client.get(f"/probes/{run.json()['id']}").json()["cells"] == run.json()["cells"]
    assert run.json()["calls"]["made"] == llm_server.calls()

    answers = tmp_path / "many.jsonl"
    answers.write_text("".join(json.dumps(a) + "\n" for a in cycled(items(24), 1100)))
    env = {
        "QADI_DATABASE_URL": migrated_db,
        "QADI_JUDGES_CONFIG": str(planted_config(llm_server, tmp_path, ("tone",))),
    }
    out = tmp_path / "run.json"
    done = probe(env, "--probes", "sentiment", "--out", str(out), answers=answers)
    assert done.returncode == 0, done.stderr[-2000:]
    [cell] = json.loads(out.read_text())["cells"]
    assert (cell["n"], cell["mean_change"], cell["exact"]) == (1100, 1.0, False)
