"""The long simulations of tests/stats: every checked error rate in one table.

Runs `pytest tests/stats` with QADI_STATS_LONG=1 (more repetitions than CI's fast version)
and prints each rate the tests checked: what was measured, over how many repetitions, the
target and the binomial p of "the target holds". docs/statistics.md quotes this table.

Run: .venv/bin/python tests/perf/stats_simulation.py [-k EXPR] [--by-module] [--out table.md]
(`--by-module`: one table per test module, as docs/statistics.md groups them by method)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIGN = {"at_least": "≥", "at_most": "≤", "abs_at_most": "abs. ≤", "measured": ""}


def run(expression: str | None) -> tuple[list[dict], int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "rates.jsonl"
        env = {**os.environ, "QADI_STATS_LONG": "1", "QADI_STATS_TABLE": str(table)}
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/stats"]
        if expression:
            command += ["-k", expression]
        start = time.monotonic()
        code = subprocess.call(command + ["--timeout", "3600"], cwd=ROOT, env=env)
        seconds = time.monotonic() - start
        rows = [json.loads(line) for line in table.read_text().splitlines()] if table.exists() else []
    return rows, code, seconds


def markdown(rows: list[dict]) -> str:
    lines = [
        "| check | setting | realised | repetitions | target | p (target holds) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        p = "" if r["p"] is None else f"{r['p']:.2g}"
        reps = "" if r["reps"] is None else str(r["reps"])
        target = "" if r["target"] is None else f"{SIGN[r['direction']]} {r['target']:g}"
        lines.append(
            f"| {r['name']} | {r['setting']} | {r['value']:.3f} | {reps} | {target} | {p} |"
        )
    return "\n".join(lines)


def by_module(rows: list[dict]) -> str:
    """One table per test module (rows keep their order within a module)."""
    modules = list(dict.fromkeys(r.get("test", "") for r in rows))
    return "\n\n".join(
        f"### {module or 'unnamed'}\n\n" + markdown([r for r in rows if r.get("test", "") == module])
        for module in modules
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="expression", help="pytest -k expression")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    parser.add_argument("--by-module", action="store_true", help="a table per test module")
    args = parser.parse_args()
    rows, code, seconds = run(args.expression)
    text = by_module(rows) if args.by_module else markdown(rows)
    print(text)
    print(f"\n{len(rows)} rates checked in {seconds:.0f} s; pytest exit {code}")
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
