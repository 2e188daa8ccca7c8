"""Where a judge and the SMEs disagree, item by item: the view a lead reads before revising a
judge (`qadi align diff`, the workbench's alignment page) and the cases the reviser is shown.

A penalty-weighted rubric is read criterion by criterion: an item disagrees on a criterion
when the judge's mark differs from the SMEs' majority mark (an even split has no majority
and is not counted). A scale rubric is read by rating gap: judge − the SMEs' mean, rounded
half away from zero; an item disagrees when the gap is at least one point.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from dataclasses import asdict, dataclass

from sqlalchemy.orm import Session

from calibration.formats.interchange import neutralise_formula
from judges.alignment import Case
from judges.fit import template_of
from judges.templates import PromptTemplate, TemplateRegistry
from rubrics import PenaltyWeightedRubric, Rubric
from service.stores.alignment import Labelled, labelled_items
from service.stores.rubrics import get_rubric

EXPORT_FORMATS = ("csv", "jsonl")


@dataclass(frozen=True)
class Disagreement:
    """One item in one group: what the judge said beside what the SMEs said."""

    group: str  # a criterion id, or a rating gap such as "judge higher by 2"
    item_id: str
    attributes: dict[str, str]
    prompt: str
    answer: str
    judge: str  # the judge's verdict as text: "met" / "not met", or the score
    judge_rationale: str | None
    smes: list[str]  # each SME's verdict, in the same words
    sme_rationales: list[str | None]
    gap: float  # how far apart: share of SMEs against the judge, or |rating gap|


def labelled_for(
    session: Session, project: str, rubric: str, judge: str, templates: TemplateRegistry
) -> tuple[Rubric, PromptTemplate, list[Labelled]]:
    """The rubric (`rubric`: 'id' for its newest version, or 'id@version'), the template it
    grades with now, and the SME-labelled items the judge graded with that template;
    RubricNotFound or TemplateError when there is no such rubric or template."""
    found = get_rubric(session, project, rubric)
    template = template_of(found, templates)
    ref = f"{found.id}@{found.version}"
    return found, template, labelled_items(session, project, ref, judge, template.hash)


def by_group(
    items: list[Labelled], rubric: Rubric, stratum: tuple[str, str] | None = None
) -> dict[str, list[Disagreement]]:
    """The disagreements of `items` (of one stratum, `(attribute, value)`, when given), by
    criterion or by rating gap; each group's widest first."""
    chosen = [i for i in items if stratum is None or i.attributes.get(stratum[0]) == stratum[1]]
    groups: dict[str, list[Disagreement]] = defaultdict(list)
    for item in chosen:
        found = (
            _criterion_disagreements(item, rubric)
            if isinstance(rubric, PenaltyWeightedRubric)
            else _rating_disagreement(item)
        )
        for disagreement in found:
            groups[disagreement.group].append(disagreement)
    return {
        group: sorted(found, key=lambda d: (-d.gap, d.item_id))
        for group, found in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    }


def _shared(item: Labelled) -> dict:
    return {
        "item_id": item.item_id,
        "attributes": item.attributes,
        "prompt": item.prompt,
        "answer": item.response,
        "judge_rationale": item.judge_rationale,
        "sme_rationales": [s["rationale"] for s in item.smes],
    }


def _criterion_disagreements(item: Labelled, rubric: PenaltyWeightedRubric) -> list[Disagreement]:
    found = []
    for criterion in rubric.criteria:
        marks = [s["marks"][criterion.id] for s in item.smes if criterion.id in s["marks"]]
        judged = item.judge_marks.get(criterion.id)
        if judged is None or not marks or 2 * sum(marks) == len(marks):
            continue
        majority = 2 * sum(marks) > len(marks)
        if judged != majority:
            against = sum(1 for m in marks if m != judged) / len(marks)
            found.append(Disagreement(
                group=criterion.id, judge=_mark(judged), gap=against,
                smes=[_mark(s["marks"][criterion.id]) if criterion.id in s["marks"] else "—"
                      for s in item.smes],
                **_shared(item),
            ))  # fmt: skip
    return found


def _mark(met: bool) -> str:
    return "met" if met else "not met"


def _rating_disagreement(item: Labelled) -> list[Disagreement]:
    gap = item.judge_score - item.reference_score
    rounded = int(math.copysign(math.floor(abs(gap) + 0.5), gap))
    if rounded == 0:
        return []
    side = "higher" if rounded > 0 else "lower"
    return [Disagreement(
        group=f"judge {side} by {abs(rounded)}", judge=f"{item.judge_score:g}", gap=abs(gap),
        smes=[f"{s['score']:g}" for s in item.smes], **_shared(item),
    )]  # fmt: skip


def cases(items: list[Labelled], rubric: Rubric) -> list[Case]:
    """The disagreements as the reviser reads them: one case per item (its criteria or its
    rating gap together), the items the SMEs' reference is farthest from first."""
    merged: dict[str, list[Disagreement]] = defaultdict(list)
    for found in by_group(items, rubric).values():
        for disagreement in found:
            merged[disagreement.item_id].append(disagreement)
    by_id = {item.item_id: item for item in items}
    out = []
    for item_id, found in merged.items():
        item = by_id[item_id]
        out.append(Case(
            item_id=item_id, answer=item.response,
            judge_verdict="; ".join(f"{d.group}: {d.judge}" for d in found),
            judge_reason=item.judge_rationale,
            sme_verdicts=["; ".join(f"{d.group}: {d.smes[k]}" for d in found)
                          for k in range(len(item.smes))],
            sme_reasons=[s["rationale"] or "" for s in item.smes],
            gap=abs(item.judge_score - item.reference_score),
        ))  # fmt: skip
    return sorted(out, key=lambda c: (-c.gap, c.item_id))


def export(groups: dict[str, list[Disagreement]], fmt: str) -> str:
    """The disagreements as a file, one record per (group, item): JSON lines as they are,
    or CSV with the lists joined by " | " and no cell a spreadsheet would run."""
    records = [asdict(d) for found in groups.values() for d in found]
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(Disagreement.__dataclass_fields__))
    writer.writeheader()
    for record in records:
        record.update(
            attributes=json.dumps(record["attributes"], ensure_ascii=False),
            smes=" | ".join(record["smes"]),
            sme_rationales=" | ".join(r or "" for r in record["sme_rationales"]),
        )
        writer.writerow({k: neutralise_formula(v) for k, v in record.items()})
    return buffer.getvalue()
