#!/usr/bin/env bash
# Measure the real llama-server (built by scripts/build_llama_cpp.sh) serving a tiny random-weight model
# with Qwen's real vocabulary on the CPU, with `python -m live measure`, and write the raw setup folder
# into data/raw (the one real measurement among the demo data). The figures show the method on a real
# engine, not the speed of any real model: the weights are random and tiny.
#
# Usage: bash scripts/measure_real_demo.sh [OUT_DIR]   (default data/raw; replaces the folder of that setup)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-data/raw}"
py=.venv/bin/python
eval "$(PYTHON=$py bash scripts/build_llama_cpp.sh --print-env)"
work="$(mktemp -d)"
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

model="$work/tiny-random-qwen35-vocab.gguf"
$py -m live tiny-gguf "$model" --vocab qwen35 >/dev/null
port="$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
# The command as recorded (model path without the temporary folder, no port: what a reader can repeat).
# One compute thread: the client keeps the other core, and a busy machine cannot stall a spin-waiting pair.
shown="llama-server -m tiny-random-qwen35-vocab.gguf -c 69632 -np 2 -t 1 --metrics"
(cd "$work" && exec "$LLAMA_SERVER" -m tiny-random-qwen35-vocab.gguf -c 69632 -np 2 -t 1 --metrics \
   --host 127.0.0.1 --port "$port" >"$work/server.log" 2>&1) &
server_pid=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.2
done

sha="$(sha256sum "$model" | cut -d' ' -f1)"
bytes="$(stat -c %s "$model")"
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores)"
ram="$(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo)"
$py -m live measure --base-url "http://127.0.0.1:$port" --parts decode,prefill,conc,l1,ctx \
  --runs 3 --warmups 1 --max-tokens 512 --prefill-depths 2048,8192,32768 --prefill-runs 3 \
  --conc-levels 1,2,4 --conc-rounds 2 --conc-max-tokens 256 --l1-max-tokens 2048 \
  --ctx-depths 16384 --ctx-runs 1 --ctx-max-tokens 256 --timeout 300 \
  --setup-id real-llama-server-cpu-tiny-random-qwen-vocab \
  --title "Tiny random-weight model with Qwen's vocabulary on CPU, llama.cpp 0c1e570 (shows the method, not a model's speed)" \
  --gpu cpu --cpu "$cpu" --ram-gib "$ram" --engine llama.cpp --engine-version "0c1e570 (own CPU build)" \
  --model-name "benchcards tiny random model (Qwen vocabulary)" --quant F16 \
  --server-cmd "$shown" --server-log "$work/server.log" --measured-by "benchcards (scripts/measure_real_demo.sh)" \
  --notes "A real measurement of a real engine: llama-server built from llama.cpp 0c1e570 (CPU only, GGML_NATIVE) serving a 1-layer, 32-wide model with random weights and the real Qwen tokenizer (file ${bytes} bytes, sha256 ${sha}, written by python -m live tiny-gguf --vocab qwen35). Every figure is verified from raw records, but it shows how benchcards measures, not how fast any real model runs: real models are thousands of times larger." \
  --out "$out"
