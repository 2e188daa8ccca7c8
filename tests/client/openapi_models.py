"""The client's API models, generated from the service's OpenAPI document by
datamodel-code-generator, so the client cannot drift from the service (issue 30.4).

    .venv/bin/python -m tests.client.openapi_models   # rewrites qadi_client/api_models.py

Run it after changing a request or response model of the service;
tests/client/test_models_match_openapi.py fails while the committed file is stale. The
generator is pinned (the `test` extra) so its output is the same on every machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "clients" / "python" / "qadi_client" / "api_models.py"
HEADER = (
    "# Generated from the qadi service's OpenAPI document by datamodel-code-generator: do not\n"
    "# edit. `.venv/bin/python -m tests.client.openapi_models` rewrites it."
)
FLAGS = [
    *("--input-file-type", "openapi", "--output-model-type", "pydantic_v2.BaseModel"),
    *("--target-python-version", "3.11", "--output-datetime-class", "datetime"),
    *("--use-standard-collections", "--use-union-operator", "--field-constraints"),
    *("--enum-field-as-literal", "all", "--use-schema-description", "--strict-nullable"),
    *("--collapse-root-models", "--use-annotated", "--disable-timestamp"),
    *("--custom-file-header", HEADER),
    *("--formatters", "ruff-format", "ruff-check"),
]


def openapi_document(folder: Path) -> dict[str, Any]:
    """The OpenAPI document of the service as it is built now (on an empty database)."""
    from service.app import create_app
    from service.db.engine import upgrade
    from service.settings import Settings

    url = f"sqlite:///{folder / 'openapi.db'}"
    upgrade(url)
    return create_app(Settings(database_url=url)).openapi()


def generate(document: dict[str, Any], folder: Path) -> str:
    """The models module datamodel-code-generator writes for `document`."""
    source, output = folder / "openapi.json", folder / "api_models.py"
    source.write_text(json.dumps(document, indent=1))
    codegen = Path(sys.executable).with_name("datamodel-codegen")
    subprocess.run(
        [str(codegen), "--input", str(source), "--output", str(output), *FLAGS],
        check=True,
        capture_output=True,
        text=True,
    )
    return output.read_text()


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        TARGET.write_text(generate(openapi_document(Path(folder)), Path(folder)))
    print(f"wrote {TARGET.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
