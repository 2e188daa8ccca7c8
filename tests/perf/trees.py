"""Git worktrees of earlier builds, for benchmarks that compare the working tree with one."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def trees_to_compare(base: str | None) -> Iterator[dict[str, Path]]:
    """{label: source tree}: a worktree of `base` first when given (removed afterwards, even
    when the benchmark fails), then the working tree."""
    if base is None:
        yield {"working tree": ROOT}
        return
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "base"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(tree), base], cwd=ROOT, check=True
        )
        try:
            yield {base: tree, "working tree": ROOT}
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT)
