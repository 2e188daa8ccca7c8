"""`qadi demo --local-judge`: the demo set's 150 1-5 answers graded and calibrated by the real
local judge (started through the same script as the other real-judge tests; running here),
against the three generated experts of 60 of them, with a trust map that decides overall."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from calibration.formats.interchange import read_grades
from tests.conftest import ROOT, run_cli, users_local_judge

pytestmark = pytest.mark.timeout(1800)


def test_the_demo_grades_and_calibrates_the_sample_with_a_real_model(local_judge_url, tmp_path):
    from service.db.engine import make_engine, make_sessionmaker, session_scope
    from service.db.schema import CalibrationReportRow, JudgmentRow, ResponseRow

    labelled = {g.item_id for g in read_grades(ROOT / "service/sample/grades.csv")}
    assert len(labelled) == 60  # the experts graded a minority of the 150

    database_url = f"sqlite:///{tmp_path / 'demo.db'}"
    env = {"QADI_DATA_DIR": str(tmp_path), "QADI_DATABASE_URL": database_url}
    with users_local_judge():  # the cache the fixture started the judge from
        done = run_cli("demo", "--local-judge", "--no-serve", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    written = (tmp_path / "local-judge.yaml").read_text()
    assert "hosted_vllm/smollm2" in written and local_judge_url in written

    with session_scope(make_sessionmaker(make_engine(database_url))) as session:
        rows = session.scalars(select(JudgmentRow)).all()
        report = session.scalars(select(CalibrationReportRow)).one().report
        # every 1-5 answer graded once by the local judge, ok or recorded as a parse error
        assert len(rows) == 150 and {r.judge for r in rows} == {"smollm2"}
        for row in rows:
            assert row.status in ("ok", "parse_error"), row.error
            if row.status == "ok":
                rating = row.probabilities["rating"]
                assert rating["chosen"] == str(int(row.score))
                assert sum(rating["probs"].values()) <= 1.0 + 1e-6
                expected = sum(int(v) * p for v, p in rating["probs"].items())
                assert row.expected_score == pytest.approx(expected / rating["mass"], abs=1e-4)
            else:
                assert row.score is None and row.expected_score is None and row.raw_reply
        keys = dict(session.execute(select(ResponseRow.id, ResponseRow.item_key)).all())
        ok_labelled = sum(r.status == "ok" and keys[r.response_id] in labelled for r in rows)
    # the real judge's discrete and expected scores, each against the three experts
    assert set(report["judges"]) == {"smollm2", "smollm2~expected"}
    # compared on the expert-graded answers it graded: 60 labelled, a few may fail to parse
    assert report["judges"]["smollm2"]["overall"]["n"] == ok_labelled >= 50
    assert report["inputs"]["judge_scores"] == "both"
    assert report["humans"]["n_raters"] == 3
    # the trust map decides overall for each judge; per candidate model (20 labels) it may not
    rows_by_cell = {(row["judge"], row["stratum"]): row for row in report["trust"]["rows"]}
    strata = {stratum for _, stratum in rows_by_cell}
    assert len(strata) == 4 and "overall" in strata
    assert {judge for judge, _ in rows_by_cell} == set(report["judges"])
    assert all(
        rows_by_cell[(judge, "overall")]["verdict"] != "insufficient" for judge in report["judges"]
    )
    printed = done.stdout + done.stderr
    assert "the local judge's grades" in printed and "calibration (overall)" in printed
    assert "trust map by stratum" in printed
