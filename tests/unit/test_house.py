"""The house's rules that import-linter cannot state alone: the persistence contract of
pyproject.toml names the rooms of service/ it checks (import-linter skips a source module
that contains the forbidden one, so `service` itself cannot be named), and this test keeps
that list whole, so a new room of service/ is checked from its first commit."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STORAGE_ROOMS = {"stores", "db"}  # the rooms allowed to use the tables


def persistence_contract() -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [contract] = [c for c in config["contracts"] if c["name"].startswith("Persistence")]
    return contract


def service_rooms() -> set[str]:
    """Every module and package directly under service/, as a dotted name."""
    rooms = set()
    for path in (ROOT / "service").iterdir():
        if path.is_dir() and (path / "__init__.py").exists():
            rooms.add(path.name)
        elif path.suffix == ".py" and path.stem not in ("__init__", "__main__"):
            rooms.add(path.stem)
    return {f"service.{room}" for room in rooms}


def test_the_persistence_contract_checks_every_room_of_service_but_the_storage_ones():
    contract = persistence_contract()
    assert contract["forbidden_modules"] == ["service.db.schema"]
    checked = set(contract["source_modules"])
    storage = {f"service.{room}" for room in STORAGE_ROOMS}
    assert checked == service_rooms() - storage
    assert "service.judging" in checked and "service.stores" not in checked
