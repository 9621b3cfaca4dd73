#!/usr/bin/env bash
# Create/reuse .venv, install, build the demo database from data/raw, start the site.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
# the checkout itself, editable: `import benchcards` and the `benchcards` command work from anywhere
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -e .
.venv/bin/benchcards build
exec .venv/bin/streamlit run app.py "$@"
