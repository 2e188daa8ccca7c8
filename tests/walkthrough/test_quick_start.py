"""The README's "Quick start", run as a newcomer runs it: its shell blocks, in order, as
written, in a clean copy of the repository (tracked files only, no database, no judges
file), from `make run` in the background to an HTML report whose trust map has a ✓ and a ✗.

The blocks are read from the README at test time, so a rewrite of the section stays tested.
The copy reuses this checkout's .venv (a symlink): `make run` must find its install stamp
fresh and install nothing. The README says 127.0.0.1:8000; the script runs in a network
namespace of its own (`unshare -rn`), where that port is free whatever else runs on this
machine. Without namespaces the port is rewritten to a free one, and nothing else is.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port

SECTION = "## Quick start"
PORT = "8000"


def quick_start_blocks(readme: str) -> list[str]:
    """The shell code blocks of the README's "Quick start" section, in order."""
    assert f"\n{SECTION}\n" in readme, f"README.md has no '{SECTION}' section"
    section = readme.split(f"\n{SECTION}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(?:sh|bash|shell)\n(.*?)```", section, re.DOTALL)


def clean_copy(destination: Path) -> Path:
    """The tracked files of this checkout (as they are now), and a link to its .venv."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (destination / ".venv").symlink_to(ROOT / ".venv")
    return destination


def own_network() -> bool:
    """Whether this machine lets an unprivileged user open a network namespace."""
    probe = subprocess.run(
        ["unshare", "-rn", "ip", "link", "set", "lo", "up"], capture_output=True, check=False
    )
    return probe.returncode == 0


def shell_command(script: str, env: dict[str, str]) -> list[str]:
    """`bash -c script` where 127.0.0.1:8000 is free: in a network namespace of its own, or,
    without namespaces, with the port rewritten to a free one (and QADI_PORT set to it)."""
    if own_network():
        return ["unshare", "-rn", "bash", "-c", 'ip link set lo up && exec bash -c "$0"', script]
    port = str(free_port())
    env["QADI_PORT"] = port
    return ["bash", "-c", script.replace(f"127.0.0.1:{PORT}", f"127.0.0.1:{port}")]


def test_the_wait_for_the_service_ends_when_make_run_dies(tmp_path):
    """A `make run` that fails (a broken install, a taken port) must not leave the pasted
    wait loop polling forever: it stops and says so."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "make").write_text("#!/bin/sh\necho 'make: *** [run] Error 2' >&2\nexit 2\n")
    (fake / "make").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    first = quick_start_blocks((ROOT / "README.md").read_text(encoding="utf-8"))[0]
    done = subprocess.run(
        shell_command(first, env), env=env, capture_output=True, text=True, timeout=60
    )
    assert "make: *** [run] Error 2" in done.stderr
    assert "make run stopped: its output above says why" in done.stdout


def test_the_section_is_a_walk_from_make_run_to_a_report():
    blocks = quick_start_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    script = "\n".join(blocks)
    assert blocks[0].lstrip().startswith("make run &"), blocks[0]
    for step in ("/judge", "qadi regrade", "/grades", "qadi calibrate", "--html report.html",
                 "/estimates"):
        assert step in script, f"the quick start lost its step {step!r}"


def assert_venv_is_fresh() -> None:
    """The copy's `make run` would install into this checkout's .venv (the symlink) from the
    copy, pointing its editable install and scripts at a folder the test then deletes: a
    .venv older than the declared dependencies (a stamp `make run` does not find) is named
    before anything runs. CI's `make test` always leaves a fresh one."""
    planned = subprocess.run(
        ["make", "-n", "--no-print-directory", "run"], cwd=ROOT, capture_output=True,
        text=True, check=True,
    ).stdout
    assert "pip install" not in planned, (
        ".venv is older than pyproject.toml/requirements.lock: run `make venv`, then this test"
    )


@pytest.mark.timeout(900)
def test_the_quick_start_runs_as_written(tmp_path):
    assert_venv_is_fresh()
    blocks = quick_start_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    repo = clean_copy(tmp_path / "qadi")
    script = "set -euo pipefail\n" + "\n".join(blocks)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("QADI_") and key != "VIRTUAL_ENV"
    }
    env["QADI_DATA_DIR"] = str(tmp_path / "data")  # not the user's ~/.local/share/qadi
    # a newcomer's machine: no local judge installed (`make run` would grade with it)
    env["QADI_VLLM_HOME"] = str(tmp_path / "no-local-judge")
    command = shell_command(script, env)
    log = tmp_path / "walkthrough.log"
    started = time.monotonic()
    with log.open("w") as output:
        process = subprocess.Popen(
            command, cwd=repo, env=env, stdout=output, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            returncode = process.wait(timeout=840)
        finally:
            os.killpg(process.pid, signal.SIGTERM)  # `make run &` and the service it started
    elapsed = time.monotonic() - started
    transcript = log.read_text()
    assert returncode == 0, transcript[-6000:]
    assert "pip install" not in transcript, "make run reinstalled although its stamp is fresh"
    assert "judges   stand-in-good (qadi-stand-in/good)," in transcript  # the demo's banner
    assert "STAND-INS grade deterministically" in transcript
    assert "local judge not installed (no vLLM environment in" in transcript
    assert re.search(r'"status": "ok",\s+"aggregate"', transcript), "POST /judge did not grade"
    assert re.search(r'"inserted": ?450', transcript), "the expert grades were not imported"
    report = (repo / "report.html").read_text(encoding="utf-8")
    trust_map = report.split('id="trust-map"', 1)[1].split("</section>", 1)[0]
    badged = r'<tr><td>([\w-]+) <span class="stand-in" title="[^"]*">STAND-IN</span></td>(.*?)</tr>'
    rows = dict(re.findall(badged, trust_map, re.DOTALL))  # every stand-in badged as one
    assert set(rows) == {"stand-in-good", "stand-in-noisy", "stand-in-lenient"}, trust_map
    assert "✓" in rows["stand-in-good"] and "✗" not in rows["stand-in-good"]
    assert "✗" in rows["stand-in-noisy"] and "✗" in rows["stand-in-lenient"]
    # the corrected scores: one table per candidate model, the lenient judge's mean corrected
    lenient = re.search(r"\| stand-in-lenient \| ([\d.]+) \[[^|]*\| ([\d.]+) \[", transcript)
    assert "## candidate_model=gpt-4o" in transcript and lenient, "no corrected scores"
    assert float(lenient.group(1)) < float(lenient.group(2))  # PPI below its lenient mean
    print(f"quick start ran in {elapsed:.0f} s")
