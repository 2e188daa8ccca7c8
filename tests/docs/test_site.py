"""The documentation site: `mkdocs build --strict` passes, the generated reference pages hold
every CLI command and option, every HTTP operation and schema, and every environment
variable the code reads, and no page loads anything from another host (the site must work
offline, as the service's own /docs does).

The expectations come from the code (the typer app, the OpenAPI document, the settings
model, the source tree), never from the pages or the hooks that generate them.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ASSET_TAG = re.compile(r"<(?:script|link|img|iframe|source|audio|video|embed|object|track)\b[^>]*>")
EXTERNAL = re.compile(r"^(https?:)?//", re.IGNORECASE)
HEADING = re.compile(r"<h([1-6])[^>]*>(.*?)</h\1>", re.DOTALL)
# Absolute URLs that Material's JavaScript fetches only under a condition, and how this
# site keeps the condition false (checked in test_javascript_fetches_nothing_on_this_site).
CONDITIONAL_LOADS = {
    "https://unpkg.com/mermaid": "pages with a mermaid diagram",
    "https://unpkg.com/resize-observer-polyfill": "browsers without ResizeObserver",
    "https://api.github.com/": "a repo_url on GitHub",
    "https://${": "a repo_url on GitLab",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return out


def article(site: Path, page: str) -> str:
    text = (site / page / "index.html").read_text(encoding="utf-8")
    return text[text.index("<article") : text.index("</article>")]


def plain(fragment: str) -> str:
    text = html.unescape(re.sub(r"<[^>]+>", "", fragment)).replace("¶", "")
    return " ".join(text.split())


def sections(fragment: str) -> dict[str, str]:
    """Heading text -> the plain text up to the next heading."""
    marks = list(HEADING.finditer(fragment))
    return {
        plain(m.group(2)): plain(fragment[m.end() : nxt.start() if nxt else len(fragment)])
        for m, nxt in zip(marks, [*marks[1:], None], strict=True)
    }


def commands(command, path: tuple[str, ...]):
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        if not sub.hidden:
            yield from commands(sub, (*path, name))


def test_cli_page_has_every_command_with_every_option(site):
    import typer

    from service.cli import app

    found = sections(article(site, "reference/cli"))
    root_text = plain(article(site, "reference/cli").split("<h2", 1)[0])
    checked = 0
    for path, command in commands(typer.main.get_command(app), ("qadi",)):
        name = " ".join(path)
        text = root_text if len(path) == 1 else found.get(name)
        assert text is not None, f"no section for `{name}`"
        if command.help:
            assert plain(command.help).split(".")[0][:40] in text, name
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            shown = param.opts[0] if param.param_type_name == "option" else param.name
            assert shown in text, f"`{name}`: {shown} is missing"
            # whole, as written: an unescaped "[...]" is read as rich markup and vanishes
            # from --help and from the page alike
            written = " ".join((getattr(param, "help", None) or "").replace("\\[", "[").split())
            assert written in text, f"`{name}` {shown}: help shown differs from {written!r}"
            checked += 1
    assert checked > 50  # the walk reached the options, not only the groups


def test_api_page_has_every_operation_and_schema(site, openapi_document):
    fragment = article(site, "reference/http-api")
    headings = set(sections(fragment))
    for path, item in openapi_document["paths"].items():
        for method in item:
            assert f"{method.upper()} {path}" in headings
    for name in openapi_document["components"]["schemas"]:
        assert f'id="schema-{name.lower()}"' in fragment, name
    errors = sections(fragment)["Errors"]
    assert "ErrorBody" in errors and "422" in errors


def source_files():
    """Files the project runs or ships: everything git tracks but the docs and the tests,
    keeping the test set-up a developer configures (conftest, perf, .ci)."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    for name in listed.stdout.splitlines():
        path = Path(name)
        if path.parts[0] == "docs" or path.suffix == ".md":
            continue
        if path.parts[0] == "tests" and path.name != "conftest.py" and "perf" not in path.parts:
            continue
        try:
            yield (ROOT / path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue


def test_configuration_page_names_every_environment_variable(site):
    from service.settings import Settings

    text = plain(article(site, "reference/configuration"))
    names = {f"QADI_{field.upper()}" for field in Settings.model_fields}
    for source in source_files():
        names |= {n for n in re.findall(r"\bQADI_[A-Z0-9_]+\b", source) if not n.endswith("_")}
        names |= set(re.findall(r"environ(?:\.get|\.setdefault)?[(\[]\s*[\"']([A-Z][A-Z0-9_]+)", source))
    assert {"QADI_DATABASE_URL", "QADI_DB_HOST", "LITELLM_LOCAL_MODEL_COST_MAP"} <= names
    missing = sorted(n for n in names if n not in text)
    assert not missing, f"not on the configuration page: {missing}"


def test_no_page_or_stylesheet_loads_from_another_host(site):
    bad = []
    for page in site.rglob("*.html"):
        for tag in ASSET_TAG.findall(page.read_text("utf-8")):
            for url in re.findall(r"\b(?:src|href|srcset|data)\s*=\s*[\"']([^\"']+)", tag):
                if EXTERNAL.match(url.strip()):
                    bad.append((page.relative_to(site), url))
    for sheet in site.rglob("*.css"):
        for url in re.findall(r"(?:url\(|@import)\s*[\"']?([^\"')\s;]+)", sheet.read_text("utf-8")):
            if EXTERNAL.match(url):
                bad.append((sheet.relative_to(site), url))
    assert not bad, bad


def test_javascript_fetches_nothing_on_this_site(site):
    urls = set()
    for script in site.rglob("*.js"):
        urls |= set(re.findall(r"[\"'`](https?://[^\"'`\s]*)", script.read_text("utf-8")))
    unexplained = [u for u in urls if not any(u.startswith(k) for k in CONDITIONAL_LOADS)]
    assert not unexplained, f"scripts reference hosts not reviewed: {unexplained}"
    pages = [p.read_text("utf-8") for p in site.rglob("*.html")]
    assert not any('class="mermaid"' in p for p in pages)
    assert not any("md-source" in p for p in pages)  # no repo_url: no GitHub/GitLab API call


def test_search_runs_on_a_local_index_of_the_generated_pages(site):
    index = json.loads((site / "search" / "search_index.json").read_text("utf-8"))
    text = " ".join(doc["text"] for doc in index["docs"])
    assert "--alt-min-items" in text and "QADI_REAP_INTERVAL_SECONDS" in text
    assert list((site / "assets" / "javascripts" / "workers").glob("search.*.js"))


def test_every_relative_link_of_the_readme_names_a_file_of_the_repository():
    """The README is read on the forge, not built by MkDocs, so `--strict` never sees its
    links: a page moved or never written would be a dead link on the first page a user
    reads."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [t.split("#", 1)[0] for t in targets if not EXTERNAL.match(t) and t[0] != "#"]
    missing = sorted({t for t in local if not (ROOT / t).exists()})
    assert len(local) >= 20 and not missing, missing


def test_the_quick_start_tutorial_is_the_readme_quick_start(site):
    """docs/tutorials/quick-start.md includes the README's Quick start between its markers
    (pymdownx.snippets): every command of it is on the page, so the two cannot drift."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("[start:quickstart]", 1)[1].split("[end:quickstart]", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
    page = plain(article(site, "tutorials/quick-start"))
    commands = [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]
    commands = [c for c in commands if c and not c.startswith(("-H", "\"", "'"))]
    assert len(blocks) >= 4 and len(commands) >= 6
    missing = [c for c in commands if " ".join(c.split()) not in page]
    assert not missing, missing
