#!/usr/bin/env bash
# Measure the demo sweep: the real llama-server (built by scripts/build_llama_cpp.sh) serving a tiny
# random-weight model with the Llama 3 vocabulary on the CPU, the default micro-batch against `-ub 64`, three
# fresh boots each in interleaved order, with `python -m live sweep`; writes both variants' setup folders and the sweep
# record into data/raw. The figures show the method on a real engine, not the speed of any real model.
# Prefill only: decode runs on a busy shared machine spread beyond the 5 % that ingest warns about.
#
# Usage: bash scripts/measure_demo_sweep.sh [OUT_DIR]   (default data/raw)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
out="${1:-data/raw}"
case "$out" in /*) ;; *) out="$root/$out" ;; esac
py="$root/.venv/bin/python"
eval "$(PYTHON=$py bash scripts/build_llama_cpp.sh --print-env)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

model=tiny-random-llama-bpe-vocab.gguf
$py -m live tiny-gguf "$work/$model" --vocab llama-bpe >/dev/null
# The command as recorded: `llama-server` found on PATH and the model beside it, so the setups show what a
# reader can repeat (no temporary folder, no cache path).
mkdir "$work/bin"
ln -s "$LLAMA_SERVER" "$work/bin/llama-server"
sha="$(sha256sum "$work/$model" | cut -d' ' -f1)"
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores)"
cd "$work"
PATH="$work/bin:$PATH" PYTHONPATH="$root" $py -m live sweep \
  --server-cmd "llama-server -m $model -c {ctx} -np 1 -t 1" --variant "default micro-batch=" \
  --variant "micro-batch 64=-ub 64" --repeats 3 --ctx 4096 \
  --parts prefill --prefill-depths 1K,2K --prefill-runs 3 --timeout 120 \
  --setup-id real-sweep-cpu-tiny-random-ubatch \
  --title "Tiny random-weight model on CPU, llama.cpp 0c1e570 (shows the method, not a model's speed)" \
  --gpu cpu --cpu "$cpu" --quant F16 --model-name "benchcards tiny random model (Llama 3 vocabulary, sha256 ${sha:0:12})" \
  --measured-by "benchcards (scripts/measure_demo_sweep.sh)" --out "$out"
# The sweep cannot tell that the model is a tiny random one: mark both setups as method tests (kept out of
# default selections and rankings, docs: schemas.models.Setup.method_test).
for f in "$out"/real-sweep-cpu-tiny-random-ubatch-*/setup.json; do
  $py -c 'import json, sys; p = sys.argv[1]; d = json.load(open(p)); d["method_test"] = True
open(p, "w").write(json.dumps(d, indent=2, ensure_ascii=False) + "\n")' "$f"
done
