"""Inclusion probabilities: the interchange column, the queue's probabilities and floor,
and the design weights every estimate applies (calibration/design.py, sme_queue.py)."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.design import equal_probability_sample, judge_weights, summary
from calibration.estimate import EstimateOptions, estimate
from calibration.formats.interchange import GradeFormatError, GradeRow, parse_csv, to_records
from calibration.sme_queue import choose, queue_records
from calibration.table import build_table

HEADER = "item_id,rater,rater_kind,score,inclusion_prob,segment\n"


def test_the_column_is_read_kept_and_written_back() -> None:
    rows = parse_csv(HEADER + "a,sme,human,3,0.25,x\na,J,judge,4,,x\nb,sme,human,2,1,x\n")
    assert [r.inclusion_prob for r in rows] == [0.25, None, 1.0]
    assert "inclusion_prob" not in rows[0].attributes
    assert to_records(rows[:1])[0]["inclusion_prob"] == 0.25
    assert build_table(rows).inclusion_prob.tolist() == [0.25, 1.0]


@pytest.mark.parametrize("bad", ["0", "1.5", "-0.2", "abc", "nan", "inf"])
def test_a_probability_outside_0_1_is_refused_naming_the_row_and_field(bad: str) -> None:
    with pytest.raises(GradeFormatError) as caught:
        parse_csv(HEADER + f"a,sme,human,3,{bad},x\n")
    assert caught.value.problems[0].startswith("row 2: inclusion_prob: ")


def test_one_item_with_two_probabilities_is_refused() -> None:
    rows = parse_csv(HEADER + "a,s1,human,3,0.2,x\na,s2,human,4,0.3,x\n")
    with pytest.raises(ValueError, match="grades: item a: inclusion_prob is both 0.2 and 0.3"):
        build_table(rows)


def _grades(labelled: dict[str, tuple[int, int]], probability=None, key=None, extra=None):
    """Per segment (judged items, labelled items); labels carry `probability` and `key`."""
    rows = []
    for segment, (judged, labels) in labelled.items():
        for i in range(judged):
            item, attrs = f"{segment}{i:03d}", {"segment": segment}
            rows.append(GradeRow(item_id=item, rater="J", rater_kind="judge", score=i % 5, attributes=attrs))
            if i < labels:
                mine = {**attrs, **({"inclusion_stratum": key(segment)} if key else {})}
                rows.append(GradeRow(
                    item_id=item, rater="sme", rater_kind="human", score=(i * 7) % 5,
                    inclusion_prob=probability(segment, i) if probability else None,
                    attributes=mine,
                ))  # fmt: skip
    return rows + (extra or [])


def _weights(rows):
    table = build_table(rows)
    ref = table.human_scores[:, 0]
    judged = ~np.isnan(table.judge_scores[:, 0])
    return table, judge_weights(table, judged, judged & ~np.isnan(ref)), summary(table, ref)


def test_queued_labels_are_weighted_by_their_stratum_s_labelled_share() -> None:
    # x: 4 of 10 labelled → π = 0.4, weight 2.5; y: 2 of 40 → π = 0.05, weight 20. Every label
    # of a queue stratum gets it, the one queued with an older, smaller π and the initial one
    # without any (rounds compose: (n + k)/N is the chance after all rounds).
    def probability(segment, i):
        return {"x": 0.3, "y": 0.05}[segment] if i else None

    rows = _grades({"x": (10, 4), "y": (40, 2)}, probability, lambda s: f"segment={s}")
    table, weights, plan = _weights(rows)
    labelled = np.flatnonzero(~np.isnan(table.human_scores[:, 0]))
    assert sorted(weights.weights[labelled].tolist()) == [2.5] * 4 + [20.0] * 2
    assert plan["strata"]["segment=x"] == {
        "items": 10, "labelled": 4, "inclusion_prob": 0.4, "recorded_inclusion_prob": 0.3,
    }  # fmt: skip
    assert any("segment=x: the last queue recorded inclusion_prob 0.3" in w for w in plan["warnings"])
    assert not any("segment=y" in w for w in plan["warnings"])


def test_labels_with_and_without_probabilities_make_the_estimate_undefined() -> None:
    rows = _grades({"x": (20, 6)}, lambda s, i: 0.5 if i < 3 else None)
    report = estimate(rows, EstimateOptions())
    block = report["judges"]["J"]["overall"]
    assert block["estimate"] is None and block["ci"] is None
    assert "3 labelled item(s) without inclusion_prob" in block["undefined"]
    assert any("3 of 6 labelled item(s) without inclusion_prob" in w for w in report["design"]["warnings"])


def test_recorded_probabilities_of_the_user_s_own_design_are_used_as_given() -> None:
    # Two labels at π = 0.5 and one at π = 0.1: Hájek weights 2, 2, 10.
    rows = _grades({"x": (20, 3)}, lambda s, i: 0.1 if i == 2 else 0.5)
    table, weights, plan = _weights(rows)
    labelled = np.flatnonzero(~np.isnan(table.human_scores[:, 0]))
    assert weights.weights[labelled].tolist() == [2.0, 2.0, 10.0]
    assert plan["weights"] == "1/inclusion_prob as recorded"
    human = estimate(rows, EstimateOptions())["judges"]["J"]["overall"]["human_only"]
    scores = [0.0, 2.0, 4.0]  # (i * 7) % 5 for i = 0, 1, 2
    assert human["estimate"] == pytest.approx((2 * scores[0] + 2 * scores[1] + 10 * scores[2]) / 14)


def test_a_queue_stratum_without_labels_makes_the_overall_undefined() -> None:
    rows = _grades({"x": (10, 4), "y": (10, 0)}, lambda s, i: 0.4, lambda s: f"segment={s}")
    report = estimate(rows, EstimateOptions(by=["segment"]))
    judge = report["judges"]["J"]
    assert "no labelled item in queue stratum segment=y" in judge["overall"]["undefined"]
    assert judge["strata"]["segment=x"]["ci"] is not None


def test_the_queue_gives_every_stratum_its_floor_then_writes_its_probability() -> None:
    # a: 30 judged, 1 labelled; b: 30 judged, 8 labelled; c: 10 judged, 0 labelled.
    # Floor 5: a gets 4, c gets 5 (b has 8); 9 of the 10 queued go to the floor.
    rows = _grades({"a": (30, 1), "b": (30, 8), "c": (10, 0)})
    found = choose(rows, 10, "segment", seed=1)
    queued = {s.key: (s.judged, s.labelled, s.queued) for s in found.strata.values()}
    assert queued["segment=a"][2] >= 4 and queued["segment=c"][2] >= 5
    assert sum(q for _, _, q in queued.values()) == 10
    records = queue_records(found)
    for record in records:
        judged, labelled, count = queued[record["inclusion_stratum"]]
        assert float(record["inclusion_prob"]) == pytest.approx((labelled + count) / judged)
        assert record["rater"] == "" and record["score"] == ""


def test_a_round_over_other_strata_is_refused() -> None:
    rows = _grades({"a": (10, 2), "b": (10, 2)}, lambda s, i: 0.2, lambda s: "model=m1")
    with pytest.raises(ValueError, match="by: earlier queue rounds drew labels by 'model=m1'"):
        choose(rows, 4, "segment")


def test_escalated_labels_stand_for_themselves_beside_queue_labels() -> None:
    """10 judged items; 2 escalated at request time (inclusion_prob 1, no queue stratum:
    chosen because the judge was unsure) and 2 queued from the other 8. The escalated
    labels get weight 1; the queue's share is 2 of the 8 other items, weight 4 each: the
    weights sum to the 10 items. (Before, all 4 shared the stratum's 4/10: the two chosen for
    the judge's doubt stood for 2.5 items each.) The queue counts the same way: a new round
    of 1 writes (2 + 1) / 8."""
    rows = _grades({"x": (10, 4)}, lambda s, i: 1.0 if i < 2 else 0.25, lambda s: "all")
    for row in rows:  # the escalated two carry no queue stratum
        if row.rater_kind == "human" and row.item_id in ("x000", "x001"):
            row.attributes.pop("inclusion_stratum")
    table, weights, plan = _weights(rows)
    labelled = np.flatnonzero(~np.isnan(table.human_scores[:, 0]))
    assert weights.weights[labelled].tolist() == [1.0, 1.0, 4.0, 4.0]
    assert plan["certainty_units"] == 2
    assert plan["strata"]["all"] == {
        "items": 8, "labelled": 2, "inclusion_prob": 0.25, "recorded_inclusion_prob": 0.25,
    }  # fmt: skip
    assert not plan["warnings"]
    queued = queue_records(choose(rows, 1, None, 0.05, seed=0))
    assert [r["inclusion_prob"] for r in queued] == [repr(3 / 8)]


def _escalated(rows, items):
    """Mark the human labels of `items` as escalated at request time: π = 1, no stratum."""
    for row in rows:
        if row.rater_kind == "human" and row.item_id in items:
            row.inclusion_prob = 1.0
    return rows


def test_uniform_labels_beside_escalations_stand_for_the_items_not_escalated() -> None:
    """20 judged items: 4 labelled without a design (a uniform sample, rule 1) and 2 more
    escalated (π = 1). The escalations weigh 1; the uniform labels are a sample of the other
    18 items, weight 18 / 4 = 4.5 each: 2 + 18 = the 20 items. Selective thresholds then
    keep each escalation with probability π_min = 4/18 (thinning), the uniform ones all."""
    rows = _escalated(_grades({"x": (20, 6)}), {"x004", "x005"})
    table, weights, plan = _weights(rows)
    labelled = np.flatnonzero(~np.isnan(table.human_scores[:, 0]))
    assert weights.weights[labelled].tolist() == [4.5] * 4 + [1.0] * 2
    assert "uniform random sample of the other judged items" in weights.rule
    assert "other than the escalated ones" in plan["assumption"] and not plan["warnings"]
    kept, note = equal_probability_sample(table, ~np.isnan(table.human_scores[:, 0]))
    assert kept[labelled[:4]].all() and "π_min = 0.222" in note


def test_escalations_alone_fix_no_threshold() -> None:
    """Every label escalated (audit_rate 0): the trusted verdicts were never sampled, so
    nothing stands for them; a census (every judged item labelled) is a sample of itself."""
    rows = _escalated(_grades({"x": (20, 3)}), {"x000", "x001", "x002"})
    table = build_table(rows)
    kept, why = equal_probability_sample(table, ~np.isnan(table.human_scores[:, 0]))
    assert kept is None and "were all escalated" in why and "audit_rate > 0" in why
    census = _escalated(_grades({"x": (3, 3)}), {"x000", "x001", "x002"})
    table = build_table(census)
    kept, why = equal_probability_sample(table, ~np.isnan(table.human_scores[:, 0]))
    assert kept.sum() == 3 and why is None
