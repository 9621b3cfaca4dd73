"""Hardware, engine and model fields that importers share: from the file, the options, or known defaults.

Every value that does not come from the file is recorded as an assumption (field, value, source)
so the contract says where it came from.
"""

from __future__ import annotations

import re
from typing import Any

from ingest.importers.base import Options, Source, name_problem

# name pattern -> GiB per GPU; only cards sold with a single memory size (ambiguous ones are left out
# on purpose: the importer then asks for --vram-gib instead of guessing)
KNOWN_VRAM: tuple[tuple[str, float], ...] = (
    (r"rtx\s*pro\s*6000", 96.0), (r"rtx\s*5090", 32.0), (r"rtx\s*5080", 16.0), (r"rtx\s*5070\s*ti", 16.0),
    (r"rtx\s*5070(?!\s*ti)", 12.0), (r"rtx\s*4090", 24.0), (r"rtx\s*4080", 16.0), (r"rtx\s*4070\s*ti\s*super", 16.0),
    (r"rtx\s*4070", 12.0), (r"rtx\s*3090", 24.0), (r"rtx\s*3080\s*ti", 12.0), (r"rtx\s*3070", 8.0),
    (r"rtx\s*3060\s*ti", 8.0), (r"rtx\s*2080\s*ti", 11.0),  # RTX 3060: sold with 12 and 8 GB
    (r"rtx\s*a6000", 48.0), (r"rtx\s*6000\s*ada", 48.0), (r"rtx\s*a5000", 24.0), (r"rtx\s*a4000", 16.0),
    (r"\bl40s?\b", 48.0), (r"\bl4\b", 24.0), (r"\ba10g?\b", 24.0), (r"\bt4\b", 16.0), (r"\bh200\b", 141.0),
    (r"\bh100\b.*\bnvl\b", 94.0), (r"\bh100\b", 80.0), (r"\bb200\b", 180.0), (r"tesla\s*p40", 24.0),
    (r"rx\s*7900\s*xtx", 24.0), (r"rx\s*7900\s*xt(?!x)", 20.0), (r"rx\s*9070", 16.0), (r"\bmi300x\b", 192.0),
    (r"\bgb10\b|dgx\s*spark", 128.0), (r"radeon\s*6800\s*xt|rx\s*6800\s*xt", 16.0),
)
UNIFIED = (r"\bgb10\b|dgx\s*spark", r"^apple\b|\bapple\s*m\d", r"radeon\s*80[56]0s", r"strix\s*halo", r"jetson")


def known_vram(name: str) -> float | None:
    """VRAM in GiB of a GPU sold with one memory size, from its name; None when unknown or ambiguous.

    An explicit size in the name ("RTX 5060 Ti 16 GB", "A100-SXM4-80GB") wins.
    """
    low = name.lower()
    m = re.search(r"(\d{1,3})\s*gb\b", low)
    if m:
        return float(m.group(1))
    for pattern, gib in KNOWN_VRAM:
        if re.search(pattern, low):
            return gib
    return None


def is_unified(name: str) -> bool:
    """True for GPUs that share system memory (DGX Spark, Apple silicon, Strix Halo, Jetson)."""
    return any(re.search(p, name.lower()) for p in UNIFIED)


def cpu_only_option(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("", "none", "cpu", "cpu only", "cpu-only")


def hardware(src: Source, opts: Options, gpu_names: list[str] | None, *, backend: str | None = None,
             cpu: str | None = None, assumed: list[dict[str, str]], what: str = "the file") -> dict[str, Any]:
    """The setup's ``hardware`` block.

    ``gpu_names`` is what the file says: a list (empty = CPU only) or None when the format cannot
    tell; ``--gpu`` fills that gap (what the file says wins, and a different --gpu is noted). VRAM:
    --vram-gib, else the known-GPU table. Raises ImportFailed naming the option to pass when the GPU
    or its VRAM is not known.
    """
    if gpu_names is not None:
        names = gpu_names  # the file says: it wins over --gpu
        if opts.gpu is not None and [opts.gpu.strip()] != list(dict.fromkeys(names)) and not (
                cpu_only_option(opts.gpu) and not names):
            assumed.append({"field": "hardware.gpus", "value": ", ".join(names) or "none (CPU only)",
                            "source": f"the file (--gpu {opts.gpu.strip() or 'none'} not used)"})
    elif opts.gpu is not None:
        names = [] if cpu_only_option(opts.gpu) else [opts.gpu.strip()] * (opts.gpu_count or 1)
        assumed.append({"field": "hardware.gpus", "value": opts.gpu.strip() or "none", "source": "--gpu"})
    else:
        raise src.fail("hardware", f"{what} does not say which GPU ran it: pass --gpu NAME (and --vram-gib N), "
                                   "or --gpu none for a CPU-only run")
    for i, name in enumerate(names):
        problem = name_problem(name)
        if problem:
            raise src.fail(f"GPU name (hardware.gpus[{i}].name)", problem)
    if cpu is not None and name_problem(cpu):
        raise src.fail("CPU name (hardware.cpu)", str(name_problem(cpu)))
    gpus: list[dict[str, Any]] = []
    for name in dict.fromkeys(names):
        count = opts.gpu_count if opts.gpu_count is not None else names.count(name)
        vram = opts.vram_gib if opts.vram_gib is not None else known_vram(name)
        field = f"hardware.gpus[{len(gpus)}].vram_gib"
        if vram is None:
            raise src.fail(field, f"VRAM of {name!r} is not known to benchcards (several sizes are sold, or the "
                                  "card is not in its table): pass --vram-gib N")
        assumed.append({"field": field, "value": f"{vram:g}",
                        "source": "--vram-gib" if opts.vram_gib is not None else "known GPU table"})
        g: dict[str, Any] = {"name": name, "count": count, "vram_gib": float(vram)}
        if opts.backend or backend:
            g["backend"] = opts.backend or backend
        unified = opts.unified_memory if opts.unified_memory is not None else (True if is_unified(name) else None)
        if unified is not None:
            g["unified_memory"] = unified
        gpus.append(g)
    hw: dict[str, Any] = {"gpus": gpus}
    if opts.cpu or cpu:
        hw["cpu"] = opts.cpu or cpu
    if opts.ram_gib is not None:
        hw["ram_gib"] = float(opts.ram_gib)
    return hw


def gpu_label(hw: dict[str, Any]) -> str:
    """'RTX 4090', '2x RTX 3090' or 'CPU' for titles and ids."""
    gpus = hw.get("gpus") or []
    if not gpus:
        return "CPU"
    return " + ".join((f"{g['count']}x " if g["count"] > 1 else "") + short_gpu(g["name"]) for g in gpus)


def short_gpu(name: str) -> str:
    """A GPU name without the vendor boilerplate ('NVIDIA GeForce RTX 4090' -> 'RTX 4090')."""
    s = re.sub(r"(?i)\b(nvidia|geforce|amd|radeon(?= rx)|intel\(r\)|\(tm\))\s*", "", name).strip()
    return s or name


QUANT = re.compile(
    r"(?i)(?:^|[-_.])((?:UD-)?(?:IQ\d_[A-Z0-9]+|Q\d_K(?:_[A-Z]{1,2})?|Q\d_\d|Q\d_K_XL|TQ\d_\d|MXFP4(?:_MOE)?|"
    r"BF16|F16|F32|FP8|INT4|INT8|AWQ|GPTQ)(?:_R\d{1,2})?)$")  # _R4/_R8: ik_llama.cpp's repacked types


def split_model_file(filename: str) -> tuple[str, str | None, str]:
    """(model name, quantisation or None, file name) from a weights path like
    '/m/Qwen3.5-35B-A3B-UD-Q4_K_XL-00001-of-00002.gguf'."""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    stem = re.sub(r"(?i)\.gguf$", "", base)
    stem = re.sub(r"-\d{5}-of-\d{5}$", "", stem)
    m = QUANT.search(stem)
    if m:
        name = stem[: m.start(1)].rstrip("-_.") or stem
        return name, m.group(1).upper(), base
    return stem or base, None, base


FTYPE = {"Q4_K - Medium": "Q4_K_M", "Q4_K - Small": "Q4_K_S", "Q5_K - Medium": "Q5_K_M", "Q5_K - Small": "Q5_K_S",
         "Q3_K - Medium": "Q3_K_M", "Q3_K - Small": "Q3_K_S", "Q3_K - Large": "Q3_K_L", "Q2_K - Medium": "Q2_K",
         "Q6_K": "Q6_K", "Q8_0": "Q8_0", "Q4_0": "Q4_0", "F16": "F16", "BF16": "BF16", "all F32": "F32"}


def quant_from_ftype(text: str) -> str | None:
    """'Q4_K_M' from llama.cpp's file-type description ('Q4_K - Medium'), else the text itself. Older builds
    wrote 'mostly Q4_0', ik_llama.cpp 'IQ4_K_R4 - 4.5 bpw': the words around the type are dropped.

    >>> [quant_from_ftype(t) for t in ("Q4_K - Medium", "mostly Q4_0", "IQ4_K_R4 - 4.5 bpw", "IQ4_XS - 4.25 bpw")]
    ['Q4_K_M', 'Q4_0', 'IQ4_K_R4', 'IQ4_XS']
    """
    t = text.strip()[:200]
    t = re.sub(r"^mostly ", "", t)
    t = re.sub(r" - [0-9]{1,3}(?:\.[0-9]{1,4})? bpw$", "", t)
    if not t:
        return None
    return FTYPE.get(t, t.split(" (")[0].replace(" - ", "_").replace(" ", "_"))


#: file names that do not name the model ('model.gguf', 'ggml-model-q4_0.gguf'): the model's own name is used
GENERIC_STEMS = re.compile(r"(?i)(?:ggml-)?(?:model|weights|gguf|output|out|converted)(?:[-_.]?\d{1,4})?")


def model_of(path: str | None, fallback_name: str, ftype: str | None, model_opt: str | None,
             assumed: list[dict[str, Any]], meta_name: str | None = None) -> dict[str, Any]:
    """The setup's ``model`` from a GGUF path (else ``fallback_name``): name, file and quant (from the
    file name, else llama.cpp's file-type text ``ftype``); ``--model`` (``model_opt``) names it instead,
    which is appended to ``assumed``. A file name that names no model (``model.gguf``) gives way to the
    model's own name (``meta_name``, GGUF ``general.name``), else to ``fallback_name``; that is recorded."""
    if path:
        name, quant, file_name = split_model_file(path)
        better = meta_name or (fallback_name if fallback_name != "unknown model" else None)
        if GENERIC_STEMS.fullmatch(name) and better:
            assumed.append({"field": "model.name", "value": better[:200],
                            "source": f"the model's own name (the file {file_name[:80]} does not name it)"})
            name = better
    else:
        name, quant, file_name = fallback_name, None, None
    quant = quant or quant_from_ftype(ftype or "")
    if model_opt:
        name = model_opt
        assumed.append({"field": "model.name", "value": name, "source": "--model"})
    model: dict[str, Any] = {"name": name}
    if file_name:
        model["file"] = file_name
    if quant:
        model["quant"] = quant
    return model
