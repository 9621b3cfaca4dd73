#!/usr/bin/env bash
# Create/reuse .venv, install test dependencies (and Debian's Chromium for the browser tests), build the real
# llama.cpp engine once (cached), run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements-dev.txt
# the checkout itself, editable: `import benchcards` and the `benchcards` command work from anywhere
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -e .
if [ ! -x /usr/bin/chromium ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
export CHROMIUM=/usr/bin/chromium
# A real llama.cpp engine for the `engine` tests: CPU build of llama-server and llama-bench, cached by commit
# outside the checkout (first run ~7 min on 2 cores, then instant); sets LLAMA_SERVER, LLAMA_BENCH, LLAMA_VOCAB_DIR.
llama_env="$(PYTHON=.venv/bin/python bash scripts/build_llama_cpp.sh --print-env)"  # a failed build stops here
eval "$llama_env"
export BENCHCARDS_REQUIRE_ENGINE=1  # an engine test that cannot find its engine fails instead of skipping
.venv/bin/python -m schemas --check
.venv/bin/ruff check .
.venv/bin/mypy  # the packages listed in pyproject.toml
# pytest exits 5 when it collected no tests: that is a failure here too. loadgroup: the real-engine tests
# (xdist_group "engine") run one after another on one worker and share their servers.
exec .venv/bin/python -m pytest -n 2 --dist loadgroup -p no:cacheprovider tests "$@"
