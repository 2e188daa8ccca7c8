"""How `make test` splits the suite between its processes (tests/conftest.py): a module
named to run in one process must exist, or a rename would quietly make its fixture twice."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ONE_PROCESS_MODULES, unit_of_work

ROOT = Path(__file__).resolve().parents[2]


def test_every_module_named_to_run_in_one_process_exists():
    assert [m for m in ONE_PROCESS_MODULES if not (ROOT / m).is_file()] == []


def test_a_named_modules_tests_are_one_unit_and_other_tests_each_their_own():
    workers = "tests/integration/test_workers.py"
    assert unit_of_work(f"{workers}::test_a") == unit_of_work(f"{workers}::test_b[sqlite]")
    other = "tests/integration/test_regrade.py"
    assert unit_of_work(f"{other}::test_a") != unit_of_work(f"{other}::test_b")
    assert unit_of_work("tests/realjudge/test_x.py::a") == unit_of_work("tests/realjudge/y.py::b")
