#!/usr/bin/env bash
# Build a CPU-only llama-server and llama-bench for the tests, once per llama.cpp commit.
#
# Source: the llama.cpp tree that the llama-cpp-python sdist vendors, with its git objects
# (.git/modules/vendor/llama.cpp). `git archive` of the pinned commit gives a clean source tree without any
# access to the llama.cpp repository; pip fetches (and caches) the sdist.
#
# Result, outside the checkout and keyed by the commit:
#   $BENCHCARDS_CACHE/llama.cpp/<commit>/bin/llama-server
#   $BENCHCARDS_CACHE/llama.cpp/<commit>/bin/llama-bench
#   $BENCHCARDS_CACHE/llama.cpp/<commit>/bin/ggml-vocab-llama-bpe.gguf, ggml-vocab-qwen35.gguf
#   $BENCHCARDS_CACHE/llama.cpp/<commit>/BUILD_INFO
# ($BENCHCARDS_CACHE defaults to ${XDG_CACHE_HOME:-~/.cache}/benchcards.)
#
# Idempotent: a finished build is reused after a quick `--version` check (a binary built with GGML_NATIVE on
# another CPU fails that check and is rebuilt). The build runs in a temporary directory beside the cache and
# is moved into place only when complete, so an interrupted build never leaves a half-finished cache entry;
# a lock file keeps two concurrent runs from building at once.
#
# Usage: bash scripts/build_llama_cpp.sh [--print-env]
#   --print-env   print `export LLAMA_SERVER=... LLAMA_BENCH=... LLAMA_VOCAB_DIR=...` lines for `eval`
# Environment: PYTHON (interpreter with pip, default .venv/bin/python or python3), BUILD_JOBS (default 2).
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36
LLAMA_CPP_COMMIT=0c1e57098bba43ac29e6e3b677cdceebdd22334f
VOCABS=(ggml-vocab-llama-bpe.gguf ggml-vocab-qwen35.gguf)

print_env=0
case "${1:-}" in
  --print-env) print_env=1 ;;
  -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "build_llama_cpp.sh: unknown argument: $1 (try --help)" >&2; exit 2 ;;
esac

repo="$(cd "$(dirname "$0")/.." && pwd)"
cache_root="${BENCHCARDS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/benchcards}/llama.cpp"
dest="$cache_root/$LLAMA_CPP_COMMIT"
python="${PYTHON:-}"
if [ -z "$python" ]; then
  if [ -x "$repo/.venv/bin/python" ]; then python="$repo/.venv/bin/python"; else python=python3; fi
fi
jobs="${BUILD_JOBS:-2}"

log() { echo "build_llama_cpp: $*" >&2; }

emit() {
  if [ "$print_env" = 1 ]; then
    printf 'export LLAMA_SERVER=%q\nexport LLAMA_BENCH=%q\nexport LLAMA_VOCAB_DIR=%q\n' \
      "$dest/bin/llama-server" "$dest/bin/llama-bench" "$dest/bin"
  else
    log "ready: $dest/bin"
  fi
}

usable() {
  local f
  for f in llama-server llama-bench; do [ -x "$dest/bin/$f" ] || return 1; done
  for f in "${VOCABS[@]}"; do [ -s "$dest/bin/$f" ] || return 1; done
  "$dest/bin/llama-server" --version >/dev/null 2>&1 || return 1
  "$dest/bin/llama-bench" --help >/dev/null 2>&1 || return 1
}

if usable; then emit; exit 0; fi

mkdir -p "$cache_root"
exec 9>"$cache_root/.lock"
flock 9
# Another run may have finished the build while this one waited for the lock.
if usable; then emit; exit 0; fi
if [ -e "$dest" ]; then
  log "cached build at $dest does not run here (other CPU or incomplete); rebuilding"
  rm -rf "$dest"
fi

for tool in git cmake make c++ tar flock; do
  command -v "$tool" >/dev/null || { log "missing tool: $tool (install it, e.g. apt-get install build-essential cmake git)"; exit 1; }
done

work="$(mktemp -d "$cache_root/.build-XXXXXX")"
trap 'rm -rf "$work"' EXIT
started=$(date +%s)

log "fetching llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION sdist (pip cache is reused)"
"$python" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
  "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$work/sdist" >&2
sdist="$work/sdist/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz"
[ -s "$sdist" ] || { log "pip did not produce $sdist"; exit 1; }

top="llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION"
tar -xzf "$sdist" -C "$work/sdist" "$top/.git/modules/vendor/llama.cpp"
gitdir="$work/sdist/$top/.git/modules/vendor/llama.cpp"
mkdir -p "$work/src"
# The submodule's config points core.worktree at the sdist's vendor/ folder; use the export folder instead.
git_() { git --git-dir="$gitdir" --work-tree="$work/src" "$@"; }
have="$(git_ rev-parse --verify -q "$LLAMA_CPP_COMMIT^{commit}" || true)"
[ "$have" = "$LLAMA_CPP_COMMIT" ] || { log "the sdist's llama.cpp objects lack commit $LLAMA_CPP_COMMIT"; exit 1; }

git_ archive --format=tar "$LLAMA_CPP_COMMIT" | tar -x -C "$work/src"
[ -f "$work/src/scripts/ui-assets.cmake" ] || { log "exported tree lacks scripts/ui-assets.cmake"; exit 1; }

short="${LLAMA_CPP_COMMIT:0:7}"
log "configuring llama.cpp $short (CPU only, native)"
# The exported tree has no .git, so the build commit is passed in; static libraries make the two binaries
# self-contained (they can move into the cache); no prebuilt web UI download, no HTTPS, no curl.
cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_COMMIT="$short" >"$work/configure.log" 2>&1 \
  || { tail -40 "$work/configure.log" >&2; exit 1; }

log "building llama-server and llama-bench with -j$jobs (about 7 minutes on 2 cores, once)"
cmake --build "$work/build" --target llama-server llama-bench -j "$jobs" >"$work/build.log" 2>&1 \
  || { tail -60 "$work/build.log" >&2; exit 1; }

out="$work/out"
mkdir -p "$out/bin"
cp "$work/build/bin/llama-server" "$work/build/bin/llama-bench" "$out/bin/"
for f in "${VOCABS[@]}"; do cp "$work/src/models/$f" "$out/bin/"; done
{
  echo "llama_cpp_commit=$LLAMA_CPP_COMMIT"
  echo "source=llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION sdist (vendor/llama.cpp git objects)"
  echo "cmake=-DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DBUILD_SHARED_LIBS=OFF"
  echo "built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "build_seconds=$(( $(date +%s) - started ))"
  echo "cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //')"
  "$out/bin/llama-server" --version 2>&1 | sed 's/^/server_version: /'
} >"$out/BUILD_INFO"

mv "$out" "$dest"
log "built in $(( $(date +%s) - started )) s"
usable || { log "the fresh build does not run"; exit 1; }
emit
