#!/usr/bin/env bash
# One-shot GPU check of the memory test (`python -m live fit`) against a CUDA llama-server, made for the device
# machine (one NVIDIA GPU, CUDA toolkit, no network): build llama-server (pinned llama.cpp commit, CUDA), write a
# tiny random-weight model, run the memory test with NVML, then with nvidia-smi, then at a size that cannot fit,
# and record beside it what NVML and nvidia-smi say per process while each server is up, to compare.
#
# Inputs, not committed (`/.gpu/` in .git/info/exclude), prepared on a machine with network:
#   .gpu/llama.cpp-0c1e570.tar.gz  `git archive` of llama.cpp 0c1e570 as scripts/build_llama_cpp.sh exports it,
#                                  less docs/, tests/, examples/, the web UI sources and all models/ but
#                                  ggml-vocab-llama-bpe.gguf
#   .gpu/wheels/*.whl              Python 3.12 wheels the machine lacks: pydantic, pydantic-core, annotated-types,
#                                  typing-inspection, typing-extensions, gguf, nvidia-ml-py (pins: constraints.txt)
# Output in $OUT (default /tmp/gpu_check): run.log, summary.txt, probe.csv, fit.tar.gz (contracts, server logs).
# Usage: bash scripts/gpu_check.sh      (device: run(command="bash scripts/gpu_check.sh", carry=[".gpu"]))
# Dry run on a CPU build: LLAMA_SERVER=... LLAMA_VOCAB_DIR=... PY=python3.11-with-deps GPU_CHECK_WHEELS=0
#   GPU_CHECK_SIZES=2K,4K GPU_CHECK_SMI_SIZES=2K GPU_CHECK_OOM=0 GPU_CHECK_MODEL=64,4,2,128 bash scripts/gpu_check.sh
set -uo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
OUT="${OUT:-/tmp/gpu_check}"
WORK="${GPU_CHECK_WORK:-/tmp/gpu_check_work}"  # outside the repo: a warm machine keeps it (a resumed build)
PY="${PY:-python3}"
LIMIT="${GPU_CHECK_LIMIT_S:-525}"  # everything ends inside this many seconds (run's timeout_s: 540)
SIZES="${GPU_CHECK_SIZES:-16K,64K,128K}"
SMI_SIZES="${GPU_CHECK_SMI_SIZES:-16K,64K}"
OOM_SIZE="${GPU_CHECK_OOM_SIZE:-16777216}"   # 16M tokens: 256 GiB of KV cache with the model below
MODEL_DIMS="${GPU_CHECK_MODEL:-512,4,8,1024}" # n_embd,n_head,n_layer,n_ff: KV f16 = 16 KiB/token, 2 GiB at 128K
mkdir -p "$OUT" "$WORK"
T0=$(date +%s)
exec > >(tee -a "$OUT/run.log") 2>&1
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
# guard CAP CMD...: CMD under `timeout`, CAP seconds or what is left less a 30 s reserve for the summary
guard() {
  local cap=$1 t; shift
  t=$(( $(left) - 30 )); (( t > cap )) && t=$cap
  (( t < 5 )) && { say "SKIPPED, no time left: $*"; return 124; }
  timeout -k 10 "$t" "$@"
}

say "machine"
guard 20 nvidia-smi
guard 20 nvidia-smi --query-gpu=index,name,memory.total,memory.used,memory.reserved,memory.free,driver_version \
  --format=csv
guard 10 nvcc --version | tail -2
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset} cores $(nproc)"; free -g | head -2

say "python packages (wheels from .gpu/wheels into $WORK/site)"
if [ "${GPU_CHECK_WHEELS:-1}" = 1 ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$WORK/site" \
    .gpu/wheels/*.whl || say "WHEEL INSTALL FAILED"
fi
export PYTHONPATH="$WORK/site:$repo${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
"$PY" -c "import sys, pydantic, httpx, live.fit, live.fit_cli; print(sys.version.split()[0], 'pydantic',
pydantic.VERSION, 'httpx', httpx.__version__)
try:
    import pynvml; print('pynvml', pynvml.__file__, getattr(pynvml, '__version__', '?'))
except Exception as e: print('no pynvml:', e)" || say "IMPORT FAILED"

SRC="$WORK/llama.cpp"
vocab="${LLAMA_VOCAB_DIR:-$SRC/models}"
if [ -z "${LLAMA_SERVER:-}" ] && [ ! -f "$WORK/build/build.ninja" ]; then
  say "unpack llama.cpp"
  rm -rf "$SRC" && mkdir -p "$SRC" && tar -xzf .gpu/llama.cpp-0c1e570.tar.gz -C "$SRC"
fi

say "tiny model (in the background): n_embd,n_head,n_layer,n_ff = $MODEL_DIMS, vocab llama-bpe from $vocab"
MODEL="$WORK/tiny-${MODEL_DIMS//,/x}.gguf"
"$PY" -c "
import sys; from pathlib import Path; from live.tiny_gguf import write_tiny_gguf
e, h, l, f = map(int, sys.argv[2].split(','))
write_tiny_gguf(Path(sys.argv[1]), n_embd=e, n_head=h, n_layer=l, n_ff=f, vocab='llama-bpe',
                vocab_folder=Path(sys.argv[3]))" "$MODEL" "$MODEL_DIMS" "$vocab" &
model_pid=$!

if [ -z "${LLAMA_SERVER:-}" ]; then
  BLD="$WORK/build"
  if [ ! -f "$BLD/build.ninja" ]; then
    say "configure (CUDA, sm_90, no FlashAttention kernels: they are about a third of the CUDA compile)"
    args=(-DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=OFF
          -DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF -DGGML_CCACHE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF
          -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF
          -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_COMMIT=0c1e570)
    cuda_flags="-allow-unsupported-compiler"  # the image's gcc may be newer than nvcc knows
    if ! cmake -S "$SRC" -B "$BLD" -G Ninja "${args[@]}" "-DCMAKE_CUDA_FLAGS=$cuda_flags" >"$WORK/configure.log" 2>&1; then
      # a toolkit assembled from pip wheels keeps cuBLAS and libcuda elsewhere: name them
      say "configure failed; looking for cuBLAS / libcuda outside the toolkit"; grep -A3 "CMake Error" "$WORK/configure.log" | head -20
      for pair in cublas:libcublas.so cublasLt:libcublasLt.so cuda_driver:libcuda.so; do
        f=$(find /usr/local /usr/lib /usr/lib64 /opt -name "${pair#*:}*" -type f 2>/dev/null | sort | head -1)
        echo "${pair%%:*}: ${f:-not found}"; [ -n "$f" ] && args+=("-DCUDA_${pair%%:*}_LIBRARY=$f")
        [ -n "$f" ] && export LD_LIBRARY_PATH="$(dirname "$f")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      done
      inc=$(find /usr/local /opt -name cublas_v2.h 2>/dev/null | head -1)
      [ -n "$inc" ] && { cuda_flags+=" -I$(dirname "$inc")"; args+=("-DCMAKE_CXX_FLAGS=-I$(dirname "$inc")"); }
      rm -rf "$BLD"
      cmake -S "$SRC" -B "$BLD" -G Ninja "${args[@]}" "-DCMAKE_CUDA_FLAGS=$cuda_flags" >"$WORK/configure.log" 2>&1 \
        || { say "CONFIGURE FAILED"; tail -40 "$WORK/configure.log"; }
    fi
    grep -E "CUDA Toolkit|CMAKE_CUDA_ARCHITECTURES|CUDA host compiler|Including CUDA" "$WORK/configure.log"
  fi
  say "build llama-server (-j $(nproc))"
  b0=$(date +%s)
  guard 430 cmake --build "$BLD" --target llama-server -j "$(nproc)" >"$WORK/build.log" 2>&1
  rc=$?
  say "build exit $rc after $(( $(date +%s) - b0 )) s; $(grep -c '^\[' "$WORK/build.log") steps logged"
  tail -5 "$WORK/build.log"
  (( rc != 0 )) && { grep -B2 -A12 -m3 "error" "$WORK/build.log" | head -60; }
  LLAMA_SERVER="$BLD/bin/llama-server"
fi
wait "$model_pid" || say "MODEL WRITE FAILED"
ls -la "$MODEL"
save_logs() {
  [ -f "$WORK/build.log" ] && tail -c 300000 "$WORK/build.log" | gzip >"$OUT/build.log.gz"
  [ -f "$WORK/configure.log" ] && cp "$WORK/configure.log" "$OUT/"
}
[ -x "$LLAMA_SERVER" ] || { say "no llama-server: stopping"; save_logs; exit 1; }
# shared libraries the binary cannot find (cuBLAS from a pip wheel, say): add their folders
for lib in $(ldd "$LLAMA_SERVER" | awk '/not found/ {print $1}'); do
  f=$(find /usr/local /usr/lib /opt -name "$lib" 2>/dev/null | head -1)
  say "$lib not found by the loader; using ${f:-nothing}"
  [ -n "$f" ] && export LD_LIBRARY_PATH="$(dirname "$f")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
ldd "$LLAMA_SERVER" | grep -Ei "cuda|cublas|not found"
guard 30 "$LLAMA_SERVER" --version
guard 30 "$LLAMA_SERVER" --list-devices

say "probe: NVML (device and per process) and nvidia-smi every 0.5 s into $OUT/probe.csv"
rm -f "$WORK/probe.stop"
"$PY" - "$OUT/probe.csv" "$WORK/probe.stop" <<'EOF' &
import csv, os, subprocess, sys, time
out, stop = sys.argv[1], sys.argv[2]
MIB = 1 << 20
try:
    import pynvml
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
except Exception as e:  # a CPU dry run
    print("probe: no NVML:", e, flush=True); pynvml = h = None
def smi(query, what):
    try:
        r = subprocess.run(["nvidia-smi", f"--query-{query}={what}", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=10)
        return r.stdout.strip().replace("\n", ";").replace(", ", ":")
    except Exception as e:
        return f"error {e.__class__.__name__}"
def servers():
    pids = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and open(f"/proc/{p}/comm").read().strip() == "llama-server":
                pids.append(p)
        except OSError:
            pass
    return ";".join(sorted(pids))
seen = set()
with open(out, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["t", "servers", "nvml_v1_used", "nvml_v2_used", "nvml_v2_reserved", "nvml_procs", "smi_used_reserved",
                "smi_procs"])
    while not os.path.exists(stop):
        t, row = time.time(), []
        if pynvml:
            v1 = pynvml.nvmlDeviceGetMemoryInfo(h)
            try:
                v2 = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
                v2u, v2r = f"{v2.used / MIB:.1f}", f"{v2.reserved / MIB:.1f}"
            except Exception as e:
                v2u, v2r = f"error {e}", ""
            try:
                procs = ";".join(f"{p.pid}:" + (f"{p.usedGpuMemory / MIB:.1f}" if p.usedGpuMemory is not None else "NA")
                                 for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h))
            except Exception as e:
                procs = f"error {e}"
            row = [f"{v1.used / MIB:.1f}", v2u, v2r, procs]
        else:
            row = ["", "", "", ""]
        s = servers()
        w.writerow([f"{t:.2f}", s, *row, smi("gpu", "memory.used,memory.reserved"),
                    smi("compute-apps", "pid,used_memory")])
        f.flush()
        if s and s not in seen and pynvml:  # once per server, the raw tables as people read them
            seen.add(s)
            time.sleep(2)
            print(f"probe: server {s} (t={time.time():.2f}):", flush=True)
            subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv"], timeout=10)
            subprocess.run(["nvidia-smi", "--query-gpu=memory.used,memory.reserved,memory.total", "--format=csv"],
                           timeout=10)
        time.sleep(0.5)
EOF
probe_pid=$!

fit() {  # fit NAME CAP ARGS...: the memory test, its folder $WORK/fit-NAME
  local name=$1 cap=$2; shift 2
  say "memory test '$name': $*"
  guard "$cap" "$PY" -m live fit --out "$WORK/fit-$name" --gpu "${GPU_CHECK_GPU:-H200}" --vram-gib 141 \
    --title "gpu check $name" --load-timeout 120 --timeout 60 "$@"
  say "memory test '$name' exit $?"
}
cmd="$LLAMA_SERVER -m $MODEL -c {ctx} -np 1"
fit nvml 200 --server-cmd "$cmd" --sizes "$SIZES"   # auto: NVML when nvidia-ml-py imports
fit smi 120 --server-cmd "$cmd" --sizes "$SMI_SIZES" --memory nvidia-smi --gpu-index 0
# all layers on the GPU (-fit off: llama.cpp would otherwise move layers, and their KV cache, to host memory)
[ "${GPU_CHECK_OOM:-1}" = 1 ] && fit oom 60 --server-cmd "$cmd -fit off" --sizes "$OOM_SIZE" --load-timeout 40

touch "$WORK/probe.stop"; wait "$probe_pid"
say "summary"
"$PY" - "$WORK" "$OUT/probe.csv" <<'EOF' | tee "$OUT/summary.txt"
import csv, glob, json, re, sys
work, probe = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(probe)))
def num(x):
    try: return float(x)
    except (TypeError, ValueError): return None
def per_pid(field, pid):  # "pid:MiB;pid:MiB"
    for part in (field or "").split(";"):
        p, _, v = part.partition(":")
        if p.strip() == pid: return num(v)
for c in sorted(glob.glob(f"{work}/fit-*/*/fit/*/contract.json")):
    run = c.split("/fit-")[1].split("/")[0]
    d = json.load(open(c)); folder = c.rsplit("/", 1)[0]
    log = open(f"{folder}/client.log").read()
    print(f"\n##### {run}: {d['peak_memory_method']}\nadded: {d.get('added_by_benchcards')}, engine {d.get('engine_version')}")
    for s in d["steps"]:
        m = re.search(rf"size {s['ctx']}: pid (\d+)", log); pid = m.group(1) if m else "?"
        mine = [r for r in rows if pid in r["servers"].split(";")]
        mx = lambda f: max((v for v in map(f, mine) if v is not None), default=None)
        smi_used = lambda r: num((r["smi_used_reserved"] or "").split(":")[0])
        print(f"-- ctx {s['ctx']}: {s['result']} pid {pid} peak {s.get('peak_gib')} GiB from {s.get('peak_source')}; "
              f"baseline {s.get('gpu_baseline_gib')}, load peak {s.get('gpu_load_peak_gib')}, rss {s.get('rss_peak_gib')}"
              f" / hwm {s.get('rss_hwm_gib')} GiB; prompt {s.get('prompt_tokens')}, decode {s.get('decode_tps')}, "
              f"devices {s.get('gpu_devices')}; flags {s.get('memory_flags')}; error {s.get('error')}")
        print(f"   probe ({len(mine)} rows while it ran), max MiB: NVML v1 used {mx(lambda r: num(r['nvml_v1_used']))}, "
              f"v2 used {mx(lambda r: num(r['nvml_v2_used']))}, v2 reserved {mx(lambda r: num(r['nvml_v2_reserved']))},"
              f" NVML this pid {mx(lambda r: per_pid(r['nvml_procs'], pid))}, smi used {mx(smi_used)}, "
              f"smi this pid {mx(lambda r: per_pid(r['smi_procs'], pid))}")
        for b in s.get("engine_buffers", []): print(f"   buffer {b}")
        for b in s.get("memory_breakdown", []): print(f"   breakdown {b}")
        try:
            for line in open(f"{folder}/server-{s['ctx']}.log", errors="replace"):
                if re.search(r"buffer size|memory_breakdown|kv_cache: size|out of memory|failed|fit_params|projected|"
                             r"will leave|cudaMalloc|CUDA0|flash_attn|offload|n_ctx  |n_ctx_slot =", line):
                    print("   log:", line.rstrip()[:240])
        except OSError as e:
            print("   no server log:", e)
EOF
tar -czf "$OUT/fit.tar.gz" -C "$WORK" $(cd "$WORK" && ls -d fit-* 2>/dev/null) 2>/dev/null
save_logs
pgrep -x llama-server && say "A llama-server IS STILL RUNNING"
say "done; $OUT: $(ls "$OUT" | tr '\n' ' ')"
