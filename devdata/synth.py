"""Realistic synthetic raw setup folders, for the demo, tests and benchmarks.

Every folder this writes says ``"synthetic": true`` in its setup.json and its title
starts with "Synthetic"; the site badges it. Output is a pure function of the seed.

Usage: python -m devdata.synth OUT_DIR --count N [--seed S]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

from schemas.models import SCHEMA_VERSION

GPUS = [  # name, VRAM GiB, memory bandwidth GB/s, relative compute
    ("NVIDIA GeForce RTX 3090", 24.0, 936, 1.0),
    ("NVIDIA GeForce RTX 4090", 24.0, 1008, 2.0),
    ("NVIDIA GeForce RTX 5090", 32.0, 1792, 2.9),
    ("NVIDIA GeForce RTX 5060 Ti 16 GB", 16.0, 448, 0.9),
    ("NVIDIA GeForce RTX 3060 12 GB", 12.0, 360, 0.4),
    ("AMD Radeon RX 7900 XTX", 24.0, 960, 1.1),
    ("NVIDIA RTX A6000", 48.0, 768, 1.3),
]
MODELS = [  # name, repo, total B, active B, arch, native ctx
    ("Qwen3.5-35B-A3B", "Qwen/Qwen3.5-35B-A3B-GGUF", 35.0, 3.0, "qwen35moe", 262144),
    ("Qwen3.5-27B", "Qwen/Qwen3.5-27B-GGUF", 27.0, 27.0, "qwen35", 262144),
    ("gpt-oss-20b", "openai/gpt-oss-20b-GGUF", 21.0, 3.6, "gpt-oss", 131072),
    ("Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct-GGUF", 8.0, 8.0, "llama", 131072),
]
QUANTS = {"Q4_K_M": 0.60, "UD-Q4_K_XL": 0.58, "Q6_K": 0.82, "Q8_0": 1.06}
TESTS = [  # id, label, description, n, base accuracy, token limit, tasks
    ("mmlu_pro", "MMLU-Pro", "400 fixed questions, letter answer", 400, 0.58, 1024, None),
    ("gpqa_diamond", "GPQA Diamond", "198 questions, letter answer", 198, 0.42, 1024, None),
    ("ifeval", "IFEval", "200 prompts, strict", 200, 0.82, 4096, None),
    ("livecodebench", "LiveCodeBench", "40 newest tasks, the code is run", 40, 0.36, 32768, None),
    ("ruler_8k", "RULER 8K", "4 tasks x 10 at 8,192 tokens", 40, 0.70, 128,
     ["multi_key", "common_words", "multi_hop_qa", "variable_tracking"]),
]
PROMPTS = ("code", "prose")


@dataclass(frozen=True)
class Perf:
    decode: float
    prefill: float
    offload_layers: int


def _perf(gpu: tuple, model: tuple, bpp: float) -> Perf:
    _, vram, bw, compute = gpu
    _, _, total_b, active_b, _, _ = model
    decode = 0.55 * bw / (active_b * bpp + 2.0)
    prefill = 1400.0 * compute * (3.0 / active_b) ** 0.6
    weights_gib = total_b * bpp * 1e9 / 2**30
    offload = 0
    if weights_gib > vram * 0.85:
        share = (weights_gib - vram * 0.75) / weights_gib
        offload = max(1, round(share * 48))
        decode *= max(0.25, 1.0 - 1.2 * share)
        prefill *= max(0.3, 1.0 - share)
    return Perf(decode=decode, prefill=prefill, offload_layers=offload)


def _write_json(path: Path, obj: dict) -> bytes:
    data = (json.dumps(obj, indent=1, ensure_ascii=False) + "\n").encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def _attach(run_dir: Path, name: str, text: str) -> dict:
    data = text.encode()
    (run_dir / name).parent.mkdir(parents=True, exist_ok=True)
    (run_dir / name).write_bytes(data)
    return {"path": name, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
            "description": "client log"}


def server_argv(file: str, ctx: int, slots: int, kv: str, offload_layers: int, *, moe: bool) -> list[str]:
    """The llama-server command of a synthetic setup: every value right after its flag.

    Offload keeps the experts of ``offload_layers`` layers in system RAM for a MoE
    model (--n-cpu-moe) and puts fewer layers on the GPU for a dense one (-ngl).
    """
    gpu_layers = ["-ngl", str(max(1, 48 - offload_layers))] if offload_layers and not moe else ["-ngl", "999"]
    experts = ["--n-cpu-moe", str(offload_layers)] if offload_layers and moe else []
    cache = ["-ctk", kv, "-ctv", kv] if kv != "f16" else []
    return ["llama-server", "-m", file, *gpu_layers, *experts, "-fa", "on", "-c", str(ctx), *cache,
            "-np", str(slots), "-b", "2048", "-ub", "512", "-t", "8", "--jinja", "--temp", "0.6",
            "--top-p", "0.95", "--top-k", "20", "--seed", "42", "--host", "127.0.0.1", "--port", "8080",
            "--metrics"]


def offload_deviations(argv: list[str]) -> list[dict[str, str]]:
    """The deviation a synthetic setup states for the offload its command (``server_argv``) has: the experts of
    some layers in system RAM (--n-cpu-moe) for a MoE model, fewer layers on the GPU (-ngl) for a dense one;
    none without offload. Read from the command itself, so the two always agree."""
    for flag in ("--n-cpu-moe", "-ngl"):
        if flag in argv:
            value = argv[argv.index(flag) + 1]
            if flag == "--n-cpu-moe" or int(value) < 999:
                return [{"what": f"{flag} {value}", "why": "the weights exceed the VRAM"}]
    return []


def generate_setup(seed: int, out: Path, *, quality: bool = True, fit: bool = True) -> Path:
    """Write one synthetic raw setup folder under ``out``; returns its path.

    Side effects: creates ``out/<setup_id>/`` with setup.json, a speed run, and
    (unless disabled) a quality and a fit run, each with a small log attachment.
    """
    rng = random.Random(seed)
    gpu = GPUS[rng.randrange(len(GPUS))]
    model = MODELS[rng.randrange(len(MODELS))]
    quant = rng.choice(sorted(QUANTS))
    bpp = QUANTS[quant]
    perf = _perf(gpu, model, bpp)
    build = 11800 + rng.randrange(500)
    slots = rng.choice([1, 2, 4])
    ctx = min(model[5], rng.choice([65536, 131072, 262144]))
    kv = rng.choice(["f16", "q8_0"])
    setup_id = f"synthetic-{seed:05d}-{model[0].lower().replace('.', '')}-{quant.lower()}"
    folder = out / setup_id
    argv = server_argv(f"{model[0]}-{quant}.gguf", ctx, slots, kv, perf.offload_layers, moe=model[3] < model[2])
    day = 1 + seed % 27
    date = f"2026-10-{day:02d}"
    setup = {
        "schema_version": SCHEMA_VERSION,
        "setup_id": setup_id,
        "title": f"Synthetic: {model[0]} {quant} on {gpu[0]}",
        "synthetic": True,
        "provenance": f"devdata.synth seed {seed}: generated, not measured",
        "hardware": {"gpus": [{"name": gpu[0], "count": 1, "vram_gib": gpu[1],
                               "backend": "ROCm 6.4" if "AMD" in gpu[0] else "CUDA 13.0"}],
                     "cpu": rng.choice(["AMD Ryzen 9 7950X", "Intel Core i7-12700K", "AMD Ryzen 7 5800X3D"]),
                     "ram_gib": float(rng.choice([32, 64, 128])), "driver": "580.95.05",
                     "os": "Debian 13, kernel 6.12"},
        "engine": {"name": "llama.cpp", "version": f"b{build}", "build_number": build,
                   "commit": hashlib.sha1(str(build).encode(), usedforsecurity=False).hexdigest()[:9], "own_build": rng.random() < 0.3},
        "model": {"name": model[0], "repo": model[1], "file": f"{model[0]}-{quant}.gguf", "quant": quant,
                  "file_bytes": int(model[2] * bpp * 1e9), "params_total_b": model[2],
                  "params_active_b": model[3], "architecture": model[4]},
        "server": {"argv": argv, "env": {}, "slots_source": "own choice"},
        "sampling": {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "seed": 42, "source": "model card"},
        "thinking": False,
        "deviations": offload_deviations(argv),
        "notes": "Synthetic data for demos and tests; the figures follow a simple performance model.",
        "measured_by": "devdata.synth",
        "measured_at": [date],
    }
    _write_json(folder / "setup.json", setup)
    _speed_run(rng, folder, setup_id, perf, slots, ctx, date)
    if quality:
        _quality_run(rng, folder, setup_id, model, quant, date)
    if fit:
        _fit_run(rng, folder, setup_id, model, bpp, gpu, perf, ctx, date)
    return folder


def too_long(depth: int, output_tokens: int, per_slot: int, slots: int) -> str:
    """Why a step does not fit one server slot, in the live client's words (``live.measure``)."""
    return (f"{depth:,} prompt tokens + {output_tokens:,} output tokens = {depth + output_tokens:,} tokens, "
            f"more than the server's context per slot of {per_slot:,} tokens ({slots} slots)")


def _speed_run(rng: random.Random, folder: Path, setup_id: str, perf: Perf, slots: int, ctx: int,
               date: str) -> None:
    run_id = f"{setup_id}-speed"
    run_dir = folder / "speed" / run_id
    t = 0.0
    recs: list[dict] = []
    log: list[str] = []
    # this draw once chose a short run that failed its step; it stays so the figures after it keep their seed, and
    # the shipped demo data builds without warnings (the tests' own fixtures show failed steps)
    rng.random()

    def request(part: str, prompt: str | None, depth: int, out_tokens: int, *, rnd: int = 0,
                warm: bool = False, conc: int | None = None, start: float | None = None,
                slow: float = 1.0) -> dict:
        nonlocal t
        send = t if start is None else start
        prompt_tokens = max(depth, 40 + rng.randrange(30))
        prefill = perf.prefill / (1 + prompt_tokens / 200000) * rng.lognormvariate(0, 0.02)
        decode = perf.decode / (1 + prompt_tokens / 150000) / slow * rng.lognormvariate(0, 0.012)
        ttft = prompt_tokens / prefill + 0.015
        first = send + ttft
        last = first + (out_tokens - 1) / decode
        end = last + 0.0008
        words = int(out_tokens * rng.uniform(0.62, 0.72))
        rec = {"part": part, "prompt_id": prompt, "depth": depth if part in ("prefill", "ctx") else None,
               "concurrency": conc, "round": rnd, "warmup": warm, "prompt_tokens": prompt_tokens,
               "output_tokens": out_tokens, "t_send": round(send, 6), "t_first": round(first, 6),
               "t_last": round(last, 6), "t_end": round(end, 6),
               "finish_reason": "length" if out_tokens >= 512 else "stop",
               "chars": int(words * rng.uniform(5.8, 6.8)), "words": words,
               "timings": {"cache_n": 0, "prompt_n": prompt_tokens, "prompt_ms": round((ttft - 0.01) * 1000, 3),
                           "prompt_per_second": round(prompt_tokens / (ttft - 0.01), 3),
                           "predicted_n": out_tokens, "predicted_ms": round((last - first) * 1000, 3),
                           "predicted_per_second": round((out_tokens - 1) / (last - first), 3)}}
        rec = {k: v for k, v in rec.items() if v is not None}
        if start is None:
            t = end + 0.05
        log.append(f"{send:10.3f} {part} {prompt or '-'} depth={depth} tokens={out_tokens}")
        recs.append(rec)
        return rec

    for prompt in PROMPTS:
        request("decode", prompt, 0, 512, warm=True)
        for r in range(5):
            request("decode", prompt, 0, 512, rnd=r)
    # -np N without -kvu splits -c over the slots: a step that does not fit one slot is skipped (_speed_parts)
    per_slot = ctx // slots
    prefill_depths = [d for d in (2048, 8192, 32768) if d + 32 <= per_slot]
    for depth in prefill_depths:
        for r in range(3):
            request("prefill", "prose", depth, 32, rnd=r)
    for level in (1, 2, 4, 8):
        for r in range(3):
            start = t
            ends = []
            for i in range(level):
                queue = (i // slots) * (512 / perf.decode) if level > slots else 0.0
                share = min(level, slots)
                slow = 1 + 0.35 * (share - 1)
                rec = request("conc", "prose", 0, 512, rnd=r, conc=level, start=start + queue + 0.002 * i,
                              slow=slow)
                rec["t_send"] = round(start + 0.002 * i, 6)
                ends.append(rec["t_end"])
            t = max(ends) + 0.05
    request("l1", "prose", 0, 3000 + rng.randrange(2000))
    depths = [d for d in (16384, 32768, 65536, 131072) if d + 512 <= per_slot]
    for depth in depths:
        for prompt in PROMPTS:
            for r in range(2):
                request("ctx", prompt, depth, 512, rnd=r)
    contract = {
        "schema_version": SCHEMA_VERSION, "kind": "speed", "run_id": run_id, "setup_id": setup_id,
        "started_at": f"{date}T20:00:00Z", "finished_at": f"{date}T20:{10 + int(t) // 60 % 40:02d}:00Z",
        "tool": "devdata.synth", "engine_version": "synthetic",
        "method": _speed_method(prefill_depths, depths, slots, ctx),
        "parts": _speed_parts(prefill_depths, depths, slots, ctx),
        "requests": recs,
        "attachments": [_attach(run_dir, "client.log", "\n".join(log) + "\n")],
    }
    _write_json(run_dir / "contract.json", contract)


def _speed_method(prefill_depths: list[int], depths: list[int], slots: int, ctx: int) -> dict:
    """The method of a synthetic speed run (only the steps that ran are listed, as the live client does)."""
    return {"parts": ["decode", "prefill", "conc", "l1", "ctx"], "prompt_ids": list(PROMPTS), "runs": 5,
            "warmups": 1, "max_tokens": 512, "min_decode_tokens": 256,
            "prefill_depths": prefill_depths, "prefill_runs": 3, "conc_levels": [1, 2, 4, 8],
            "conc_rounds": 3, "conc_max_tokens": 512, "l1_max_tokens": 8192, "ctx_depths": depths, "ctx_runs": 2,
            "cache_prompt": False, "thinking": False, "server_slots": slots, "server_ctx": ctx,
            "server_ctx_per_slot": ctx // slots}


def _speed_parts(prefill_depths: list[int], depths: list[int], slots: int, ctx: int) -> list[dict]:
    """Part statuses: every part ok, each step that does not fit one slot skipped with the reason."""
    skipped = [("prefill", d, 32) for d in (2048, 8192, 32768) if d not in prefill_depths]
    skipped += [("ctx", d, 512) for d in (16384, 32768, 65536, 131072) if d not in depths]
    return ([{"part": p, "status": "ok"} for p in ("decode", "prefill", "conc", "l1")]
            + [{"part": f"{part}/{d}", "status": "skipped", "reason": too_long(d, out, ctx // slots, slots)}
               for part, d, out in skipped]
            + [{"part": "ctx", "status": "ok"}])


def _quality_run(rng: random.Random, folder: Path, setup_id: str, model: tuple, quant: str, date: str) -> None:
    run_id = f"{setup_id}-quality"
    run_dir = folder / "quality" / run_id
    skill = {"Qwen3.5-35B-A3B": 0.0, "Qwen3.5-27B": 0.04, "gpt-oss-20b": -0.03,
             "Llama-3.1-8B-Instruct": -0.2}[model[0]] - (0.02 if quant.startswith("Q4") else 0.0)
    tests = []
    for tid, label, desc, n, base, limit, tasks in TESTS:
        p = min(0.97, max(0.03, base + skill))
        items = []
        for i in range(n):
            cut = rng.random() < (0.02 if limit > 1024 else 0.0)
            right = (not cut) and rng.random() < p
            item = {"id": f"{tid}-{i:04d}", "right": right, "cut_off": cut,
                    "tokens": limit if cut else max(1, int(rng.lognormvariate(math.log(min(limit, 600) / 3), 0.6))),
                    "seconds": round(rng.uniform(0.2, 9.0), 3)}
            if tasks:
                item["task"] = tasks[i // (n // len(tasks))]
            items.append(item)
        tests.append({"test": tid, "label": label, "description": desc, "status": "ok", "token_limit": limit,
                      "thinking": False, "seed": 42, "in_flight": 4,
                      "sampling": {"temperature": 0.6, "top_p": 0.95, "top_k": 20}, "items": items})
    att = _attach(run_dir, "quality.log", f"synthetic quality run {run_id}\n")
    _write_json(run_dir / "contract.json", {
        "schema_version": SCHEMA_VERSION, "kind": "quality", "run_id": run_id, "setup_id": setup_id,
        "started_at": f"{date}T21:00:00Z", "finished_at": f"{date}T22:00:00Z", "tool": "devdata.synth",
        "tests": tests, "attachments": [att]})


def _fit_run(rng: random.Random, folder: Path, setup_id: str, model: tuple, bpp: float, gpu: tuple,
             perf: Perf, ctx_max: int, date: str) -> None:
    run_id = f"{setup_id}-fit"
    run_dir = folder / "fit" / run_id
    weights_gpu = min(model[2] * bpp * 1e9 / 2**30, gpu[1] * 0.75)
    kv_per_token_gib = (0.00002 if model[3] < model[2] else 0.00012)
    steps = []
    ctx = 4096
    while ctx <= model[5]:
        peak = weights_gpu + 0.8 + kv_per_token_gib * ctx
        pt = int(ctx * 0.95)
        if peak > gpu[1]:
            steps.append({"ctx": ctx, "peak_gib": round(min(peak, gpu[1]), 2), "result": "no_load",
                          "error": "failed to allocate KV cache: out of memory"})
            break
        dec = perf.decode / (1 + pt / 150000) * rng.lognormvariate(0, 0.01)
        steps.append({"ctx": ctx, "prompt_tokens": pt, "filled_pct": 95.0,
                      "ttft_s": round(pt / perf.prefill * (1 + pt / 200000), 3),
                      "prefill_tps": round(perf.prefill / (1 + pt / 200000), 1), "decode_tps": round(dec, 1),
                      "answer_tokens": 96, "peak_gib": round(peak, 2), "result": "answered",
                      "finish_reason": "length" if ctx == 4096 else "stop"})
        ctx *= 2
    att = _attach(run_dir, "fit.log", "\n".join(f"ctx={s['ctx']} {s['result']}" for s in steps) + "\n")
    _write_json(run_dir / "contract.json", {
        "schema_version": SCHEMA_VERSION, "kind": "fit", "run_id": run_id, "setup_id": setup_id,
        "started_at": f"{date}T22:30:00Z", "finished_at": f"{date}T23:00:00Z", "tool": "devdata.synth",
        "steps": steps, "attachments": [att]})


def generate(out: Path, count: int, seed: int = 1) -> list[Path]:
    """Write ``count`` synthetic setup folders (seeds ``seed`` .. ``seed+count-1``)."""
    return [generate_setup(seed + i, out) for i in range(count)]


#: the build timeline of the demo (written as setups by ``python -m ingest.importers.demo``): build number,
#: commit, and how each test moved against the first build
#: (prefill, decode at depth 0, decode at depth 16K): a prefill gain, a deep-context decode regression, its fix
BUILDS = [(6050, "1f0e3d2c", 1.00, 1.00, 1.00), (6120, "5b7a9e41", 1.08, 1.00, 1.00),
          (6188, "9c2d4f6a", 1.08, 1.00, 0.93), (6250, "d3e8a1b7", 1.09, 1.01, 1.01)]


def llama_bench_output(seed: int, build: int, commit: str, gains: tuple[float, float, float]) -> bytes:
    """One synthetic ``llama-bench -o json`` output (5 repetitions of pp512 and tg128 at depths 0, 4K
    and 16K) of Qwen3-30B-A3B Q4_K_M on an RTX 4090, laid out as llama-bench writes it."""
    rng = random.Random(seed * 100003 + build)
    pp_gain, tg_gain, deep_gain = gains
    base = {"build_commit": commit, "build_number": build, "cpu_info": "AMD Ryzen 9 7950X 16-Core Processor",
            "gpu_info": "NVIDIA GeForce RTX 4090", "backends": "CUDA",
            "model_filename": "/models/Qwen3-30B-A3B-Q4_K_M.gguf", "model_type": "qwen3moe 30B.A3B Q4_K - Medium",
            "model_size": 18556684288, "model_n_params": 30532122624, "n_batch": 2048, "n_ubatch": 512,
            "n_threads": 16, "cpu_mask": "0x0", "cpu_strict": False, "poll": 50, "type_k": "f16", "type_v": "f16",
            "n_gpu_layers": 99, "n_cpu_moe": 0, "split_mode": "layer", "main_gpu": 0, "no_kv_offload": False,
            "flash_attn": 1, "devices": "auto", "tensor_split": "0.00", "tensor_buft_overrides": "none",
            "use_mmap": True, "embeddings": False, "no_op_offload": 0}
    day = 1 + (build - 6000) // 10
    tests: list[str] = []
    for depth, pp_rate, tg_rate in ((0, 3900.0, 196.0), (4096, 3300.0, 172.0), (16384, 2350.0, 131.0)):
        for n_prompt, n_gen, rate in ((512, 0, pp_rate * pp_gain), (0, 128, tg_rate * (
                deep_gain if depth == 16384 else tg_gain))):
            n = n_prompt + n_gen
            ns = [round(1e9 * n / (rate * rng.gauss(1.0, 0.006))) for _ in range(5)]
            ts = [1e9 * n / t for t in ns]
            mean = sum(ts) / len(ts)
            sd = math.sqrt(max(0.0, sum(x * x for x in ts) / 4 - mean * mean * 5 / 4))
            avg_ns = sum(ns) // len(ns)
            sd_ns = int(math.sqrt(max(0.0, sum(x * x for x in ns) / 4 - avg_ns * avg_ns * 5 / 4)))
            row = dict(base, n_prompt=n_prompt, n_gen=n_gen, n_depth=depth,
                       test_time=f"2025-10-{day:02d}T21:{10 + len(tests):02d}:00Z", avg_ns=avg_ns, stddev_ns=sd_ns,
                       avg_ts=float(f"{mean:.6f}"), stddev_ts=float(f"{sd:.6f}"))
            lines = [f'    "{k}": ' + (f"{v:.6f}" if isinstance(v, float) else json.dumps(v)) for k, v in row.items()]
            lines.append(f'    "samples_ns": [ {", ".join(map(str, ns))} ]')
            lines.append(f'    "samples_ts": [ {", ".join(f"{x:.6g}" for x in ts)} ]')
            tests.append("  {\n" + ",\n".join(lines) + "\n  }")
    return ("[\n" + ",\n".join(tests) + "\n]\n").encode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devdata.synth",
                                     description="Write realistic synthetic raw setup folders (labelled synthetic).")
    parser.add_argument("out", type=Path, help="folder to write setup folders into")
    parser.add_argument("--count", type=int, default=3, help="number of setups (default 3)")
    parser.add_argument("--seed", type=int, default=1, help="first seed (default 1)")
    args = parser.parse_args(argv)
    for p in generate(args.out, args.count, args.seed):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
