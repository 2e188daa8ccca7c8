"""`qadi demo --local-judge`: the bundled sample graded and calibrated by the real local judge
(started through the same script as the other real-judge tests; already running here)."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from tests.conftest import run_cli

pytestmark = pytest.mark.timeout(1800)


def test_the_demo_grades_and_calibrates_the_sample_with_a_real_model(local_judge_url, tmp_path):
    from service.db.engine import make_engine, make_sessionmaker, session_scope
    from service.db.schema import CalibrationReportRow, JudgmentRow

    database_url = f"sqlite:///{tmp_path / 'demo.db'}"
    env = {"QADI_DATA_DIR": str(tmp_path), "QADI_DATABASE_URL": database_url}
    done = run_cli("demo", "--local-judge", "--no-serve", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    written = (tmp_path / "local-judge.yaml").read_text()
    assert "hosted_vllm/smollm2" in written and local_judge_url in written

    with session_scope(make_sessionmaker(make_engine(database_url))) as session:
        rows = session.scalars(select(JudgmentRow)).all()
        report = session.scalars(select(CalibrationReportRow)).one().report
        # every sample answer graded once by the local judge, ok or recorded as a failure
        assert len(rows) == 6 and {r.judge for r in rows} == {"smollm2"}
        for row in rows:
            assert row.status in ("ok", "parse_error"), row.error
            if row.status == "ok":
                assert row.probabilities is not None and row.probabilities["criteria"]
                for dist in row.probabilities["criteria"].values():
                    assert set(dist["probs"]) == {"true", "false"}
                    assert sum(dist["probs"].values()) <= 1.0 + 1e-6
            else:
                assert row.score is None and row.expected_score is None and row.raw_reply
        assert any(r.status == "ok" for r in rows)
    # the real judge beside the sample's SMEs and its illustrative judge rows
    assert "smollm2" in report["judges"]
    assert report["inputs"]["judge_scores"] == "both"
    assert report["n_items"] == 6
    assert "trust" in report and report["trust"]["rows"]
    printed = done.stdout + done.stderr
    assert "the local judge's grades" in printed and "calibration (overall)" in printed
