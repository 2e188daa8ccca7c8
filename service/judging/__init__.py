"""POST /judge and /judge/batch below HTTP: the grading use case (`grading.GradingService`:
idempotent claims, the grade, the finish, in two group-committed transactions), its limits
(sizes, rate, calls in flight, replicas' shared limits) and what a request ends as
(`outcomes`). The routes are in service/api/judge.py; the grading core in judges/."""
