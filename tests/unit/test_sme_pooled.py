"""Issue 19 part 9: the SME cross-evaluation pooled over targets, on invented grades in
the paper's schema (seed 004; notes/004_sme_crosseval.md l. 226-249), numbers by hand."""

from __future__ import annotations

import pytest
from scipy import stats

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


def test_cultural_minus_linguistic_mad_per_judge_needs_five_prompts_a_category_for_its_interval():
    """J: cultural |errors| 10, 6, 8, 0 -> MAD 6.0; linguistic 2, 1, 3, 2 -> 2.0; Δ = 4.0.
    Two prompts a category are too few independent units for an interval: none, and why."""
    report = pooled(rows())
    assert report["evaluations"] == 16  # 8 answers × 2 judges
    j = report["category_gap"]["J"]
    assert j["cultural"] == {"n": 4, "prompts": 2, "mad_pp": 6.0}
    assert j["linguistic"] == {"n": 4, "prompts": 2, "mad_pp": 2.0}
    assert j["delta_mad_pp"] == pytest.approx(4.0) and j["ci"] is None
    assert j["missing"].startswith("2 cluster(s), fewer than 5")


# five prompts a category, two targets each: (|J − SME| for t1, for t2) per prompt
ERRORS = {
    "cultural": [(6, 4), (5, 3), (1, 5), (9, 3), (2, 2)],  # per-prompt sums 10, 8, 6, 12, 4
    "linguistic": [(1, 1), (3, 1), (0, 2), (4, 2), (1, 0)],  # per-prompt sums 2, 4, 2, 6, 1
}


def five_prompt_rows(table: dict = ERRORS) -> list[GradeRow]:
    out = []
    for category, errors in table.items():
        for p, pair in enumerate(errors):
            prompt = f"{category}-{p}"
            for target, error in zip(("t1", "t2"), pair, strict=True):
                item = f"{prompt}|{target}"
                attributes = {"bench_item": prompt, "dialect": "gulf", "category": category}
                out.append(GradeRow(item_id=item, rater="sme", rater_kind="human", score=50,
                                    attributes=attributes))  # fmt: skip
                out.append(GradeRow(item_id=item, rater="J", rater_kind="judge",
                                    score=50 + error, attributes=attributes))  # fmt: skip
    return out


def test_the_gap_interval_is_welch_t_on_each_categorys_prompt_clustered_se():
    """Worked by hand. Cultural MAD = 40 / 10 = 4.0; residuals s_p − 4·n_p = 2, 0, −2, 4, −4,
    Σ e² = 40, Var = 5/4 · 40 / 10² = 0.5. Linguistic MAD = 15 / 10 = 1.5; residuals −1, 1,
    −1, 3, −2, Σ e² = 16, Var = 5/4 · 16 / 10² = 0.2. Δ = 2.5 ± t(ν)·√0.7 with
    ν = 0.7² / (0.5²/4 + 0.2²/4) = 6.7586 (Welch–Satterthwaite)."""
    gap = pooled(five_prompt_rows())["category_gap"]["J"]
    assert gap["cultural"]["mad_pp"] == 4.0 and gap["linguistic"]["mad_pp"] == 1.5
    assert gap["delta_mad_pp"] == pytest.approx(2.5)
    half = stats.t.ppf(0.975, 0.49 / (0.25 / 4 + 0.04 / 4)) * 0.7**0.5
    assert gap["ci"] == pytest.approx([2.5 - half, 2.5 + half])
    assert gap["method"].startswith("welch_t_cr1")


def test_dialect_leniency_of_the_smes_and_each_judge():
    """Egyptian SME mean (70+60+50+90)/4 = 67.5; J mean (80+66+42+90)/4 = 69.5, signed error
    (10+6−8+0)/4 = +2.0. Iraqi SME mean (80+40+55+65)/4 = 60.0; J (82+41+52+67)/4 = 60.5,
    signed error (2+1−3+2)/4 = +0.5; K Iraqi (1+1+1+1)/4 = +1.0."""
    leniency = pooled(rows())["dialect_leniency"]
    assert leniency["egyptian"]["sme_mean"] == 67.5 and leniency["egyptian"]["answers"] == 4
    assert leniency["egyptian"]["judges"]["J"] == {
        "n": 4, "judge_mean": 69.5, "signed_error_pp": 2.0}  # fmt: skip
    assert leniency["iraqi"]["sme_mean"] == 60.0
    assert leniency["iraqi"]["judges"]["J"]["signed_error_pp"] == 0.5
    assert leniency["iraqi"]["judges"]["K"]["signed_error_pp"] == 1.0


def test_a_judge_without_linguistic_grades_has_no_gap():
    only_cultural = [r for r in rows() if r.attributes.get("category") == "cultural"]
    gap = pooled(only_cultural)["category_gap"]["J"]
    assert gap["delta_mad_pp"] is None
    assert gap["linguistic"] == {"n": 0, "prompts": 0, "mad_pp": None}


def test_a_gap_without_spread_has_no_interval_and_says_why():
    """Every cultural answer off by 2, every linguistic one exact: Δ = 2 with no variance to
    estimate, so no interval (a zero-width one would claim certainty)."""
    errors = {"cultural": [(2, 2)] * 5, "linguistic": [(0, 0)] * 5}
    rows = five_prompt_rows(errors)
    gap = pooled(rows)["category_gap"]["J"]
    assert gap["delta_mad_pp"] == 2.0 and gap["ci"] is None
    assert gap["missing"] == "every prompt's MAD equals its category's: no variance"

