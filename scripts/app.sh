#!/usr/bin/env bash
# Create/reuse .venv, install, build the demo database from data/raw, start the site.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
.venv/bin/python -m ingest.build
exec .venv/bin/streamlit run app.py "$@"
