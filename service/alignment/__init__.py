"""Judge alignment (issue 37): where a judge and the SMEs disagree (disagreements.py), a
revision of its template from a training fold certified on a held-out one (revision.py), and
the lead's approval that makes it live (approval.py)."""
