"""The demo server's engine start-up, as hard as llama-server's (for the memory test's fast tests).

With ``--load-s``, ``--kv-mib-per-1k`` or ``--refuse-above`` the demo server behaves like llama-server
starting a model: it listens at once but answers every request with 503 "Loading model" while it loads,
prints llama.cpp's own start-up lines (the context per slot, the model / KV / compute buffer lines and the
memory breakdown table, as a ``-lv 4`` build prints them), takes ``load_s`` seconds, and holds real memory
that grows with the context (``kv_mib_per_1k`` MiB per 1,024 tokens of context, touched so that it is
resident). Above ``refuse_above`` tokens it fails as llama.cpp does when the KV cache does not fit (the
lines below were taken from the real build 0c1e570 capped with ``prlimit --as``) and exits with status 1.
``--fault die`` makes it die mid-answer.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

_T0 = time.monotonic()

MODEL_MIB = 70.13
COMPUTE_MIB = 72.01


def stamp(line: str, t: float | None = None) -> str:
    """A line as llama.cpp's logger prints it: minutes.seconds.ms.us since start, the level, the text
    ("0.02.120.325 E ggml_aligned_malloc: ..."); ``line`` starts with its level letter."""
    us = int(((time.monotonic() - _T0) if t is None else t) * 1e6)
    return f"{us // 60_000_000}.{us // 1_000_000 % 60:02d}.{us // 1000 % 1000:03d}.{us % 1000:03d} {line}"


def _say(line: str) -> None:
    if line[:2] not in ("E ", "W ", "I "):
        line = "I " + line
    sys.stderr.write(stamp(line) + "\n")
    sys.stderr.flush()


def kv_mib(ctx: int, per_1k: float) -> float:
    return ctx / 1024 * per_1k


def failure_lines(ctx: int, per_1k: float, model_path: str) -> list[str]:
    """llama.cpp's lines for a KV cache that cannot be allocated (CPU build, 0c1e570)."""
    size = int(kv_mib(ctx, per_1k or 1.0) * 2**20)
    return [
        f"E ggml_aligned_malloc: insufficient memory (attempted to allocate {size / 2**20:.2f} MB)",
        f"E ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size {size}",
        f"E alloc_tensor_range: failed to allocate CPU buffer of size {size}",
        "E llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache",
        f"E cmn  common_init_: failed to create context with model '{model_path}'",
        f"E srv    load_model: failed to create_context with model '{model_path}'",
        "E srv  llama_server: exiting due to model loading error",
    ]


async def load(server) -> None:  # server: live.demo_server.DemoServer
    """Imitate a model load; clears ``server.loading`` when ready, or exits the process like llama.cpp."""
    cfg = server.cfg
    ctx, slots = cfg.ctx, cfg.slots
    model_path = f"/models/{cfg.model}.gguf"
    _say("cmn  common_param: common_params_print_info: build 9999 (demo) with the benchcards demo server")
    _say(f"srv    load_model: loading model '{model_path}'")
    steps = 10
    held: list[bytearray] = []
    kv = kv_mib(ctx, cfg.kv_mib_per_1k)
    for k in range(steps):
        await asyncio.sleep(cfg.load_s / steps)
        if cfg.kv_mib_per_1k > 0 and (cfg.refuse_above is None or ctx <= cfg.refuse_above):
            # memory grows with the context while it loads, as the KV cache is allocated
            held.append(bytearray(b"\x01") * int(kv / steps * 2**20))
        if k == steps // 2:
            _say(f"load_tensors:   CPU_Mapped model buffer size = {MODEL_MIB:8.2f} MiB")
            if cfg.refuse_above is not None and ctx > cfg.refuse_above:
                for line in failure_lines(ctx, cfg.kv_mib_per_1k, model_path):
                    _say(line)
                os._exit(1)
    server.held_memory = held
    per_slot = ctx // slots
    _say(f"llama_kv_cache:        CPU KV buffer size = {kv:8.2f} MiB")
    _say(f"llama_kv_cache: size = {kv:8.2f} MiB ({ctx:6d} cells,   4 layers,  {slots}/{slots} seqs), "
         f"K (f16): {kv / 2:7.2f} MiB, V (f16): {kv / 2:7.2f} MiB")
    _say(f"sched_reserve:        CPU compute buffer size = {COMPUTE_MIB:8.2f} MiB")
    total = round(MODEL_MIB + kv + COMPUTE_MIB)
    _say("common_memory_breakdown_print: | memory breakdown [MiB] | total   free    self   model   context   "
         "compute    unaccounted |")
    _say(f"common_memory_breakdown_print: |   - Host               |                  {total:>4} = "
         f"{round(MODEL_MIB):>5} + {round(kv):>7} + {round(COMPUTE_MIB):>7}                |")
    _say(f"srv    load_model: initializing, n_slots = {slots}, n_ctx_slot = {per_slot}, kv_unified = 'false'")
    _say("srv  llama_server: model loaded")
    _say(f"srv  llama_server: listening on http://{cfg.host}:{cfg.port}")
    _say("srv  update_slots: all slots are idle")
    server.loading = False
