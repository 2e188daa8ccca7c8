"""Every example of the docs' "Use qadi from your pipeline" page runs here, as written, against
a running qadi service whose judge is the LLM test double."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from inspect_ai import eval
from inspect_ai.model import get_model

from tests.conftest import ROOT, run_cli
from tests.integration.test_inspect import mock_answer
from tests.integration.test_lm_eval_import import sample, write_run
from tests.integration.test_service_api import IRAQI, verdict

PAGE = ROOT / "docs" / "how-to" / "use-from-your-pipeline.md"


def section_blocks() -> dict[str, list[str]]:
    page = PAGE.read_text()
    blocks: dict[str, list[str]] = {}
    for language, code in re.findall(r"```(\w+)\n(.*?)```", page, re.S):
        blocks.setdefault(language, []).append(code)
    return blocks


BLOCKS = section_blocks()


@pytest.fixture
def readme_env(qadi_server, llm_server, monkeypatch):
    monkeypatch.setenv("QADI_URL", qadi_server.base)
    monkeypatch.setenv("QADI_KEY", qadi_server.keys["all"])
    return llm_server


def test_the_sections_examples_are_all_here():
    assert len(BLOCKS["python"]) == 3 and len(BLOCKS["bash"]) == 2


def test_client_example(readme_env, capsys):
    readme_env.script({"content": verdict(IRAQI)})
    exec(BLOCKS["python"][0], {})
    out = capsys.readouterr().out
    # shaku (3) and maku (2) met out of 6 positive points: 100 * 5/6 = 83.3
    assert "mean 83.3" in out
    assert "gpt-judge ok 83.3" in out and "'shaku_meaning': True" in out
    assert "skipped: []" in out
    assert "refused:" in out and "nope" in out
    assert "stored: iraq-0001 gpt-judge ok" in out
    assert re.search(r"report \w+ items: \d+", out)


def test_async_client_example(readme_env, capsys):
    exec(BLOCKS["python"][1], {})
    # the double's default verdict meets every criterion: (6 positive - 4 negative) / 6 = 33.3
    means = json.loads(capsys.readouterr().out.strip())
    assert means == pytest.approx([100 / 3, 100 / 3])


def test_install_example_names_the_distribution_and_its_extra():
    lines = BLOCKS["bash"][0].splitlines()
    assert lines[0].startswith("pip install ./clients/python ")  # run by test_client_install.py
    assert lines[1].startswith("pip install './clients/python[inspect]'")
    assert "inspect =" in (ROOT / "clients" / "python" / "pyproject.toml").read_text()


def import_command(line: str, path) -> list[str]:
    """The page's `qadi grades import ...` line with its example path replaced by `path`."""
    words = shlex.split(line.split("#", 1)[0])
    assert words[:3] == ["qadi", "grades", "import"]
    return [*words[1:-1], str(path)]


def test_inspect_example_then_its_log_imported(readme_env, migrated_db, tmp_path):
    namespace: dict = {}
    exec(BLOCKS["python"][2], namespace)
    model = get_model("mockllm/gpt-4o", custom_outputs=mock_answer)
    [log] = eval(namespace["shaku_maku"](), model=model, log_dir=str(tmp_path), display="none")
    [scored] = log.samples
    assert scored.scores["qadi_scorer"].value == pytest.approx(100 / 3)
    inspect_line = BLOCKS["bash"][1].splitlines()[0]
    done = run_cli(*import_command(inspect_line, log.location),
                   env={"QADI_DATABASE_URL": migrated_db})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["inserted"] == 1


def test_lm_eval_import_example(migrated_db, tmp_path):
    write_run(tmp_path / "results", {"arabic_mmlu": [sample(0, "none", acc=1.0)]})
    lm_eval_line = BLOCKS["bash"][1].splitlines()[1]
    done = run_cli(*import_command(lm_eval_line, tmp_path / "results"),
                   env={"QADI_DATABASE_URL": migrated_db})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["inserted"] == 1
