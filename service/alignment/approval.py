"""A lead approves a certified revision (`qadi align approve`, `propose --apply`, the
workbench's button): the candidate becomes the rubric's template in a new rubric version,
which POST /judge grades with from then on (a request naming the rubric's id gets its newest
version). A template change already ends the old template's request-time guarantees (they
are bound to its hash, judges/trust.py); the held-out grades become the new version's first
judgments, the training items are kept out of its calibrations (service/stores/calibration.py
`rows_from_db`), and the calibration scopes of the rubric follow the new version and run at
the next round.

A revision is approved only once, and only while the version it revised is still the
rubric's newest: otherwise its comparison was against a template that is no longer the one it
would replace. One the held-out fold did not certify is approved only when the lead says so
in as many words (`--uncertified`, a checkbox in the workbench): the run keeps its verdict,
so the record shows it went live uncertified.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from rubrics import parse_rubric, split_ref
from service.alignment.revision import AlignmentError
from service.stores import alignment as store
from service.stores import scopes
from service.stores.rubrics import find_rubric, get_rubric, save_rubric


def approve_run(
    session: Session, project: str, run_id: str, actor: str, uncertified: bool = False
) -> str:
    """Make run `run_id`'s candidate live; the new rubric version's ref. `uncertified`: the
    lead approves it although the held-out fold did not certify it."""
    run = store.get_run(session, project, run_id)
    if run is None:
        raise AlignmentError(f"run: the project has no alignment run '{run_id}'")
    if run.status == "approved":
        raise AlignmentError(f"run: '{run_id}' was approved already ({run.approved_rubric_ref})")
    if run.status != "certified" and not uncertified:
        raise AlignmentError(
            f"run: '{run_id}' was not certified on its held-out fold; approve it only if you "
            "mean to make an uncertified revision live (--uncertified)"
        )
    rubric_id, _ = split_ref(run.rubric_ref)
    newest = get_rubric(session, project, rubric_id)
    if f"{newest.id}@{newest.version}" != run.rubric_ref:
        raise AlignmentError(
            f"run: '{run_id}' revised {run.rubric_ref}, but {newest.id}@{newest.version} is "
            "the rubric's newest version now; propose a revision of it instead"
        )
    old, stored = find_rubric(session, project, run.rubric_ref)
    if not stored:  # a bundled rubric: its version stays what it is, the revision comes after
        save_rubric(session, project, old)
    revised = parse_rubric({**old.model_dump(mode="json"), "template": run.candidate})
    new_ref = store.approve(session, run, revised, actor)
    scopes.follow_revision(session, project, run.rubric_ref, new_ref)
    return new_ref
