"""Grades as files: the interchange format (CSV, JSONL, JSON), the readers of other tools'
logs (Inspect AI, lm-eval) and the line readers both use."""
