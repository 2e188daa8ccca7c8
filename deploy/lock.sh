#!/usr/bin/env bash
# Regenerate requirements.lock, the exact runtime dependency versions (with hashes) the image
# installs: pyproject.toml's dependencies resolved for the image's Python (3.11, manylinux
# x86_64), constrained to the versions installed in .venv, the ones `make test` passed with.
# Run from the repository root after `make venv`:  bash deploy/lock.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
.venv/bin/pip freeze --exclude-editable | grep -v '^qadi' > "$work/tested.txt"
if ! command -v uv >/dev/null; then
  python3 -m venv "$work/uv" && "$work/uv/bin/pip" install --quiet uv
  PATH="$work/uv/bin:$PATH"
fi
(cd "$work" && uv pip compile "$OLDPWD/pyproject.toml" \
  --python-version 3.11 --python-platform x86_64-manylinux_2_28 --generate-hashes \
  --index-url https://pypi.org/simple --constraint tested.txt \
  --custom-compile-command "bash deploy/lock.sh" --no-annotate --quiet \
  --output-file "$OLDPWD/requirements.lock")
echo "wrote requirements.lock ($(grep -c '==' requirements.lock) pinned packages)"
