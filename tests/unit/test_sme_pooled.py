"""Issue 19 part 9: the SME cross-evaluation pooled over targets, on invented grades in
the paper's schema (seed 004; notes/004_sme_crosseval.md l. 226-249), numbers by hand."""

from __future__ import annotations

import pytest

from benchmarks.sme_pooled import pooled
from calibration.formats.interchange import GradeRow

PROMPTS = {
    "c1": ("egyptian", "cultural"),
    "c2": ("egyptian", "cultural"),
    "l1": ("iraqi", "linguistic"),
    "l2": ("iraqi", "linguistic"),
}
# (prompt, target): (SME, judge J, judge K)
GRADES = {
    ("c1", "t1"): (70, 80, 75),
    ("c1", "t2"): (60, 66, 65),
    ("c2", "t1"): (50, 42, 55),
    ("c2", "t2"): (90, 90, 95),
    ("l1", "t1"): (80, 82, 81),
    ("l1", "t2"): (40, 41, 41),
    ("l2", "t1"): (55, 52, 56),
    ("l2", "t2"): (65, 67, 66),
}


def rows() -> list[GradeRow]:
    out = []
    for (prompt, target), (sme, j, k) in GRADES.items():
        dialect, category = PROMPTS[prompt]
        attributes = {"bench_item": prompt, "dialect": dialect, "category": category}
        item = f"{prompt}|{target}"
        out.append(GradeRow(item_id=item, rater="sme", rater_kind="human", score=sme,
                            attributes={"dialect": dialect, "category": category}))  # fmt: skip
        for judge, score in (("J", j), ("K", k)):
            out.append(GradeRow(item_id=item, rater=judge, rater_kind="judge", score=score,
                                attributes=attributes))  # fmt: skip
    return out


def test_cultural_minus_linguistic_mad_per_judge_with_its_interval():
    """J: cultural |errors| 10, 6, 8, 0 -> MAD 6.0; linguistic 2, 1, 3, 2 -> 2.0; Δ = 4.0.
    Per-prompt resamples: cultural MAD ∈ {8, 6, 4}, linguistic ∈ {1.5, 2, 2.5}, so every
    resampled Δ lies in [1.5, 6.5]. K: every cultural error is 5 and every linguistic one 1,
    so every resample gives Δ = 4 exactly: the interval collapses to [4, 4]."""
    report = pooled(rows(), resamples=500, seed=1)
    assert report["evaluations"] == 16  # 8 answers × 2 judges
    j = report["category_gap"]["J"]
    assert j["cultural"] == {"n": 4, "mad_pp": 6.0} and j["linguistic"] == {"n": 4, "mad_pp": 2.0}
    assert j["delta_mad_pp"] == pytest.approx(4.0)
    low, high = j["ci"]
    assert low >= 1.5 and low < 4.0 < high <= 6.5
    k = report["category_gap"]["K"]
    assert k["delta_mad_pp"] == pytest.approx(4.0) and k["ci"] == pytest.approx([4.0, 4.0])


def test_dialect_leniency_of_the_smes_and_each_judge():
    """Egyptian SME mean (70+60+50+90)/4 = 67.5; J mean (80+66+42+90)/4 = 69.5, signed error
    (10+6−8+0)/4 = +2.0. Iraqi SME mean (80+40+55+65)/4 = 60.0; J (82+41+52+67)/4 = 60.5,
    signed error (2+1−3+2)/4 = +0.5; K Iraqi (1+1+1+1)/4 = +1.0."""
    leniency = pooled(rows(), resamples=0)["dialect_leniency"]
    assert leniency["egyptian"]["sme_mean"] == 67.5 and leniency["egyptian"]["answers"] == 4
    assert leniency["egyptian"]["judges"]["J"] == {
        "n": 4, "judge_mean": 69.5, "signed_error_pp": 2.0}  # fmt: skip
    assert leniency["iraqi"]["sme_mean"] == 60.0
    assert leniency["iraqi"]["judges"]["J"]["signed_error_pp"] == 0.5
    assert leniency["iraqi"]["judges"]["K"]["signed_error_pp"] == 1.0


def test_a_judge_without_linguistic_grades_has_no_gap():
    only_cultural = [r for r in rows() if r.attributes.get("category") == "cultural"]
    gap = pooled(only_cultural, resamples=10)["category_gap"]["J"]
    assert gap["delta_mad_pp"] is None and gap["linguistic"] == {"n": 0, "mad_pp": None}
