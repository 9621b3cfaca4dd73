"""Server command lines: parse a llama-server argv into named settings, explain flags.

Used by ingest (context, slots, KV type ... as columns), the setup card (each flag
explained) and the compare page (only the flags that differ).
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass

from benchcards.domain.wrappers import split_command

#: a flag that is a switch in some builds and takes a value in others: it takes the next word as its value unless
#: that word is another flag (or the command ends), then it is the switch (``_SWITCH_MEANS`` says what it sets)
SWITCH_OR_VALUE = "switch or value"

# canonical name -> (aliases, takes a value (True, False or SWITCH_OR_VALUE), explanation)
_FLAGS: dict[str, tuple[tuple[str, ...], bool | str, str]] = {
    "model": (("-m", "--model"), True, "weights file to load"),
    "alias": (("-a", "--alias"), True, "model name that clients send in requests"),
    "ctx": (("-c", "--ctx-size"), True, "total context window in tokens over all slots: with a unified KV cache "
                                        "the slots share it as one pool, without one each slot gets -c / slots"),
    "slots": (("-np", "--parallel"), True, "requests served at the same time (slots)"),
    "kv_unified": (("-kvu", "--kv-unified"), False, "one KV cache pool shared by all slots (without it -c is "
                                                    "split evenly across the slots)"),
    "no_kv_unified": (("-no-kvu", "--no-kv-unified"), False, "no shared KV pool: -c is split evenly across the "
                                                             "slots"),
    "n_gpu_layers": (("-ngl", "--gpu-layers", "--n-gpu-layers"), True, "layers placed on the GPU"),
    "n_cpu_moe": (("-ncmoe", "--n-cpu-moe"), True, "expert weights of the first N layers stay in system RAM"),
    "cpu_moe": (("-cmoe", "--cpu-moe"), False, "all expert weights stay in system RAM"),
    "flash_attn": (("-fa", "--flash-attn"), SWITCH_OR_VALUE, "FlashAttention kernels (on/off/auto)"),
    "batch": (("-b", "--batch-size"), True, "logical batch: prompt tokens handled per step"),
    "ubatch": (("-ub", "--ubatch-size"), True, "physical batch: tokens sent to the device per step"),
    "threads": (("-t", "--threads"), True, "CPU threads for generation"),
    "threads_batch": (("-tb", "--threads-batch"), True, "CPU threads for prompt processing"),
    "cache_type_k": (("-ctk", "--cache-type-k"), True, "data type of the K cache (f16, q8_0, ...)"),
    "cache_type_v": (("-ctv", "--cache-type-v"), True, "data type of the V cache"),
    "no_mmap": (("--no-mmap",), False, "read the whole file into memory instead of mapping it"),
    "mlock": (("--mlock",), False, "lock the model in RAM so it is never swapped out"),
    "jinja": (("--jinja",), False, "apply the chat template stored in the model file"),
    "temp": (("--temp", "--temperature"), True, "default sampling temperature"),
    "top_p": (("--top-p",), True, "default nucleus (top-p) threshold"),
    "top_k": (("--top-k",), True, "default top-k cut-off"),
    "min_p": (("--min-p",), True, "default min-p threshold"),
    "repeat_penalty": (("--repeat-penalty",), True, "default repetition penalty"),
    "presence_penalty": (("--presence-penalty",), True, "default presence penalty"),
    "seed": (("-s", "--seed"), True, "random seed"),
    "host": (("--host",), True, "address the server listens on (127.0.0.1 = this machine only)"),
    "port": (("--port",), True, "TCP port"),
    "cache_ram": (("-cram", "--cache-ram"), True,
                  "MiB of host RAM for the prompt cache that keeps finished slots' KV (default 8192 in current "
                  "builds, -1 = no limit, 0 = off); saving a slot to it happens before the next request starts "
                  "and counts in neither prompt_ms nor predicted_ms, so it lengthens the client's time to first "
                  "token"),
    "no_webui": (("--no-webui",), False, "no built-in chat page; API only"),
    "metrics": (("--metrics",), False, "Prometheus statistics at /metrics"),
    "fit": (("-fit", "--fit"), True, "automatic fitting of unset options to free memory (on/off)"),
    "load_mode": (("-lm", "--load-mode"), True, "how the weights file is loaded"),
    "reasoning": (("--reasoning", "--reasoning-budget"), True, "reasoning (thinking) control"),
    "split_mode": (("-sm", "--split-mode"), True, "how layers/rows are split over several GPUs"),
    "tensor_split": (("-ts", "--tensor-split"), True, "share of the model per GPU"),
    "main_gpu": (("-mg", "--main-gpu"), True, "GPU used for intermediate results"),
    "draft_model": (("-md", "--model-draft"), True, "draft model for speculative decoding"),
    "cont_batching": (("-cb", "--cont-batching"), False, "continuous batching of requests"),
    "override_tensor": (("-ot", "--override-tensor"), True, "place matching tensors on a given device"),
    "rope_scaling": (("--rope-scaling",), True, "RoPE scaling method for longer contexts"),
    "n_predict": (("-n", "--n-predict"), True, "default maximum tokens to generate"),
    "chat_template": (("--chat-template",), True, "built-in chat template to use"),
    "mmproj": (("--mmproj",), True, "vision projector file"),
}
_ALIAS: dict[str, str] = {a: name for name, (aliases, _, _) in _FLAGS.items() for a in aliases}

#: what a SWITCH_OR_VALUE flag written as a switch sets. ``-fa`` / ``--flash-attn`` without a value is "on" in
#: ik_llama.cpp (before its PR #944, November 2025) and in llama.cpp builds up to August 2025; current
#: llama.cpp (checked on 0c1e570: ``-fa, --flash-attn [on|off|auto]``) needs a value and refuses the switch form.
#: docs/definitions.md#flash-attn-switch. ``_SWITCH_WORDS``: the card's explanation of the switch form.
_SWITCH_MEANS: dict[str, str] = {"flash_attn": "on"}
_SWITCH_WORDS: dict[str, str] = {
    "flash_attn": "FlashAttention kernels on: written as a switch, without a value, the form of ik_llama.cpp and "
                  "of llama.cpp builds up to August 2025; current llama.cpp builds need a value (-fa on, off or "
                  "auto) and refuse -fa followed by another flag",
}

#: short human names of the settings, for comparisons (canonical name -> label)
LABELS: dict[str, str] = {
    "model": "Model file", "alias": "Model name for clients", "ctx": "Context window (tokens)",
    "slots": "Slots (requests at the same time)", "kv_unified": "One shared KV cache",
    "no_kv_unified": "No shared KV cache",
    "n_gpu_layers": "Layers on the GPU", "n_cpu_moe": "Expert layers in system RAM",
    "cpu_moe": "All experts in system RAM", "flash_attn": "Flash attention", "batch": "Batch size",
    "ubatch": "Micro-batch size", "threads": "CPU threads", "threads_batch": "CPU threads for prompts",
    "cache_type_k": "K cache type", "cache_type_v": "V cache type", "no_mmap": "Memory-mapped file",
    "mlock": "Model locked in RAM", "jinja": "Model's chat template", "temp": "Temperature (server default)",
    "top_p": "Top-p (server default)", "top_k": "Top-k (server default)", "min_p": "Min-p (server default)",
    "repeat_penalty": "Repetition penalty (server default)",
    "presence_penalty": "Presence penalty (server default)", "seed": "Seed (server default)",
    "host": "Listens on", "port": "Port", "cache_ram": "Prompt cache in RAM (MiB)", "no_webui": "Web page off",
    "metrics": "/metrics page", "fit": "Automatic fitting to free memory", "load_mode": "Load mode",
    "reasoning": "Reasoning", "split_mode": "Split over GPUs", "tensor_split": "Share per GPU",
    "main_gpu": "Main GPU", "draft_model": "Draft model", "cont_batching": "Continuous batching",
    "override_tensor": "Tensor placement", "rope_scaling": "RoPE scaling", "n_predict": "Default answer limit",
    "chat_template": "Chat template", "mmproj": "Vision projector",
}
#: settings that say where or how the server is reached, not how it computes: hidden in comparisons
NOISE: frozenset[str] = frozenset({"alias", "host", "port", "metrics", "no_webui", "model"})

#: device-picking variables whose value names the measuring machine's own devices
DEVICE_ENV = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")

_ENV_EXPLAIN = {
    "CUDA_VISIBLE_DEVICES": "GPUs the process may use",
    "CUDA_DEVICE_ORDER": "how CUDA numbers the GPUs (PCI_BUS_ID = slot order, as nvidia-smi)",
    "HIP_VISIBLE_DEVICES": "AMD GPUs the process may use",
    "GGML_CUDA_ENABLE_UNIFIED_MEMORY": "let CUDA spill into system RAM",
}


# --------------------------------------------------------------------------- defaults that changed between builds

#: llama.cpp changed llama-server's slot defaults with PR #16736 ("server : support unified cache across slots"),
#: merged on 2025-11-02 as commit cd5e3b57541ecc52421130742f4d89acbcf77cd4: build number 6925 (llama.cpp's build
#: number is the commit count, ``git rev-list --count``), release b6925. From that build a server started without
#: ``-np`` (or with ``-np 1`` and no ``-kvu``) serves 4 slots that share one unified KV cache of ``-c`` tokens;
#: builds up to b6924 serve 1 slot. PR #17997 (commit 7b1db3d3b770d0affbf3aadee033e1614280085f, 2025-12-16,
#: build 7433) made the default explicit: ``-np`` -1 = auto, and an explicit ``-np 1`` stays 1 slot from then on.
#: Without a build number, a setup measured before the merge day ran an older build. See
#: docs/definitions.md#slot-defaults.
SLOT_DEFAULTS_PR = "llama.cpp PR #16736, build b6925, November 2025"
SLOT_DEFAULTS_COMMIT = "cd5e3b57541ecc52421130742f4d89acbcf77cd4"
OLD_DEFAULTS_UNTIL = 6924
NEW_DEFAULTS_FROM = 6925
#: builds from NEW_DEFAULTS_FROM up to this one also turn an explicit ``-np 1`` (without ``-kvu``) into 4 slots
NP1_OVERRIDDEN_UNTIL = 7432
OLD_DEFAULTS_BEFORE = "2025-11-02"


@dataclass(frozen=True)
class Build:
    """Which llama-server defaults a setup's build has: ``era`` 'auto' (slots auto, unified KV), 'one' (one
    slot) or None (unknown), and ``text``: the build the explanations describe, in words."""

    era: str | None
    text: str
    number: int | None = None  # the build number when known


def build_number(version: object, number: object = None) -> int | None:
    """The llama.cpp build number from a recorded number or a version like 'b6500' / 'b6500-0c6dca2'."""
    if isinstance(number, int) and not isinstance(number, bool):
        return number
    m = re.match(r"^b(\d{1,7})(?:\b|-)", str(version or "").strip())
    return int(m.group(1)) if m else None


def build_defaults(engine: str | None, version: str | None, number: int | None = None,
                   measured: list[str] | tuple[str, ...] = ()) -> Build:
    """The slot defaults of a llama.cpp build, from its build number, else from the measurement dates (a
    setup measured before the change ran an older build).

    >>> build_defaults("llama.cpp", "b6924").era, build_defaults("llama.cpp", "b6925").era
    ('one', 'auto')
    >>> build_defaults("llama.cpp", None, measured=["2025-03-02"]).era, build_defaults("llama.cpp", None).era
    ('one', None)
    """
    n = build_number(version, number)
    name = f"build b{n}" if n is not None else (f"version {version}" if version else "an unrecorded build")
    if engine is not None and "llama" not in str(engine).lower():
        return Build(None, f"{engine} {version or ''}".strip())
    if n is not None and n >= NEW_DEFAULTS_FROM:
        return Build("auto", f"{name} (after the slot defaults changed in {SLOT_DEFAULTS_PR})", n)
    if n is not None and n <= OLD_DEFAULTS_UNTIL:
        return Build("one", f"{name} (before the slot defaults changed in {SLOT_DEFAULTS_PR})", n)
    dates = sorted(str(d)[:10] for d in measured if d)
    if dates and dates[-1] < OLD_DEFAULTS_BEFORE:
        return Build("one", f"{name}, measured {dates[-1]} (before the slot defaults changed in {SLOT_DEFAULTS_PR})")
    return Build(None, f"{name} (whether it has the slot defaults of {SLOT_DEFAULTS_PR} is not known)")


_DEFAULT_SLOTS = {
    "auto": "not set: this build starts 4 slots (-np -1 = auto) that share one unified KV cache of -c tokens",
    "one": "not set: this build serves 1 slot, which gets all of -c",
    None: "not set: builds up to b6924 serve 1 slot; from b6925 (llama.cpp PR #16736, November 2025) they start "
          "4 (auto) that share one unified KV cache",
}
_DEFAULT_KVU = {
    "auto": "on by default in this build while the slot count is auto (-np not set)",
    "one": "off by default in this build: each slot has its own part of -c",
    None: "on by default from build b6925 (llama.cpp PR #16736, November 2025) while the slot count is auto; off "
          "in earlier builds",
}


#: a -ngl of at least this many layers is more than any model has: llama.cpp then places every layer on the GPU
ALL_LAYERS_FROM = 999


def gpu_layers(value: object) -> str:
    """``-ngl`` in words, the same for every way of writing "all layers": 'all' stays 'all', a count of
    ``ALL_LAYERS_FROM`` or more reads 'all (999)', a smaller count stays a count.

    >>> gpu_layers("999"), gpu_layers("all"), gpu_layers("32"), gpu_layers("auto")
    ('all (999)', 'all', '32', 'auto')
    """
    n = as_int(str(value))
    if n is not None and n >= ALL_LAYERS_FROM:
        return f"all ({n})"
    return str(value).strip().lower() if str(value).strip().lower() in ("all", "auto") else str(value)


def explain(name: str | None, value: str | None, argv: list[str], build: Build) -> str | None:
    """The explanation of one flag of ``argv`` for the build ``build`` (defaults that changed between builds
    are said for that build)."""
    if name is None:
        return None
    base = _FLAGS[name][2]
    if value is None and name in _SWITCH_WORDS:
        return _SWITCH_WORDS[name]
    s = settings(argv)
    slots_set = as_int(s.get("slots")) if isinstance(s.get("slots"), str) else None
    if name == "ctx":
        kvu = s.get("kv_unified") is True or (slots_set in (None, -1) and build.era == "auto")
        if slots_set and slots_set > 1 and not kvu:
            n = as_int(value)
            each = f" ({n // slots_set:,} each)" if n else ""
            return f"{base}; here -np {slots_set} without a unified cache: split across {slots_set} slots{each}"
        if kvu and (slots_set is None or slots_set == -1):
            return f"{base}; here one pool shared by the automatic slots ({build.text})"
        return base
    if name == "n_gpu_layers" and value is not None and gpu_layers(value).startswith("all"):
        return f"{base}: all of them ({value} is more layers than the model has)" if as_int(str(value)) else \
            f"{base}: all of them"
    if name == "slots" and value is not None and as_int(value) == -1:
        return f"{base}; -1 = auto (4 slots, with a unified KV cache unless -kvu is turned off)"
    if (name == "slots" and value is not None and as_int(value) == 1 and s.get("kv_unified") is not True
            and build.number is not None and NEW_DEFAULTS_FROM <= build.number <= NP1_OVERRIDDEN_UNTIL):
        return (f"{base}; this build (b{build.number}) replaces -np 1 without -kvu by 4 slots with a unified KV "
                "cache (llama.cpp PR #16736; from b7433 -np 1 stays 1 slot)")
    return base


def default_notes(argv: list[str], build: Build) -> list[tuple[str, str]]:
    """(part, meaning) rows for the slot settings a llama-server command leaves at their defaults, said for the
    build ``build``."""
    program = program_name(argv)
    if "llama-server" not in program:
        return []
    s = settings(argv)
    rows = []
    if "slots" not in s:
        rows.append(("-np (not set)", f"{_DEFAULT_SLOTS[build.era]} — {build.text}"))
    if "kv_unified" not in s and "no_kv_unified" not in s:
        slots = as_int(s["slots"]) if isinstance(s.get("slots"), str) else None
        if slots is not None and slots > 1:  # -kvu is on by default only while the slot count is auto
            rows.append(("-kvu (not set)", f"off: -np {slots} is set, so each slot has its own -c / {slots} tokens "
                                           "(the unified cache is a default only while the slot count is auto)"))
        else:
            rows.append(("-kvu (not set)", f"{_DEFAULT_KVU[build.era]} — {build.text}"))
    return rows


@dataclass(frozen=True)
class Arg:
    """One flag (or positional word) of a command line."""

    flag: str  # as written, e.g. "-c"
    value: str | None
    name: str | None  # canonical name when known
    explanation: str | None
    problem: str | None = None  # why the server would not accept this part as written


def _looks_like_flag(word: str) -> bool:
    if len(word) < 2 or word[0] != "-":
        return False
    # only a word whose second character is a digit, '.', or the start of 'inf'/'nan' can be a number ('-5',
    # '-.5', '-inf'): every other one is a flag without asking float() (which raises for most of a command's)
    second = word[1]
    return not _is_number(word) if second.isdigit() or second in ".iInN" else True


def wrapper(argv: list[str]) -> list[str]:
    """The words a server command runs its engine under (``prlimit --as=…``, ``env A=b``, ``taskset …``, a
    shell script: benchcards.domain.wrappers); [] when it starts with the engine."""
    return split_command(argv).wrapper


def wrapper_rows(argv: list[str]) -> list[dict[str, str]]:
    """The card's row (Part, Meaning) for the wrapper words of a server command, or none."""
    cmd = split_command(argv)
    if not cmd.wrapper:
        return []
    meaning = ("a shell command written by the person measuring; benchcards does not read the flags inside it"
               if cmd.script else "the engine is started under these words; only the engine's own flags are "
               "explained below")
    return [{"Part": f"run under: {shlex.join(cmd.wrapper)}", "Meaning": meaning}]


#: what an importer writes after the program when its source gives no server command ('vllm serve (command not
#: given)'): a placeholder, not a command
NOT_GIVEN = "(command not given)"


def command_given(argv: list[str]) -> bool:
    """Whether ``argv`` is a recorded server command, not an importer's placeholder for an unknown one.

    >>> command_given(["llama-server", "-c", "8192"]), command_given(["llama-server (command not given)"])
    (True, False)
    """
    return bool(argv) and not str(argv[0]).endswith(NOT_GIVEN)


def program_name(argv: list[str]) -> str:
    """The engine program's file name ('llama-server'), after any wrapper words; '' for a shell script."""
    program = split_command(argv).program
    return program[-1].rsplit("/", 1)[-1] if program else ""


def split_argv(argv: list[str]) -> tuple[str, list[Arg]]:
    """Split an argv into the engine program and its flags (value-taking flags keep their value).

    Wrapper words before the engine (``prlimit --as=…``, ``env A=b``; ``wrapper``) are neither the program nor
    its flags; a shell script (``sh -c '…'``) has no program or flags that are read (program '').
    ``--flag=value`` is understood; unknown flags keep a following non-flag word as value.
    A known flag that needs a value never takes the next flag as its value: it is kept
    without one and its ``problem`` says so; so is a word that belongs to no flag. A flag that is a switch in
    some builds (``SWITCH_OR_VALUE``: ``-fa``) followed by another flag or at the end is that switch, with no
    value and no problem.

    >>> [(a.flag, a.value, a.problem) for a in split_argv(["llama-server", "-fa", "-ctk", "q8_0", "-fa"])[1]]
    [('-fa', None, None), ('-ctk', 'q8_0', None), ('-fa', None, None)]
    >>> [(a.flag, a.value) for a in split_argv(["llama-server", "-fa", "off", "--flash-attn", "-1"])[1]]
    [('-fa', 'off'), ('--flash-attn', '-1')]
    """
    program, args = _split_argv(tuple(argv))
    return program, list(args)


@functools.lru_cache(maxsize=4096)
def _split_argv(argv: tuple[str, ...]) -> tuple[str, tuple[Arg, ...]]:
    """``split_argv``, kept per command: a pure function of it (its Args are frozen), asked about 20 times for
    every card's one command."""
    program, out = _split_argv_uncached(list(argv))
    return program, tuple(out)


def _split_argv_uncached(argv: list[str]) -> tuple[str, list[Arg]]:
    cmd = split_command(argv)
    if not cmd.program:
        return "", []
    program = cmd.program[0] if len(cmd.program) == 1 else shlex.join(cmd.program)
    rest = cmd.args
    out: list[Arg] = []
    i = 0
    while i < len(rest):
        word = rest[i]
        value = None
        flag = word
        if word.startswith("--") and "=" in word:
            flag, value = word.split("=", 1)
        name = _ALIAS.get(flag)
        takes = _FLAGS[name][1] if name else None
        problem = None
        if value is None and i + 1 < len(rest):
            nxt = rest[i + 1]
            if takes == SWITCH_OR_VALUE and _looks_like_flag(nxt):
                pass  # the switch form (-fa -ctk q8_0): no value, no problem
            elif takes and _looks_like_flag(nxt):
                problem = f"{flag} needs a value, but it is followed by the flag {nxt}"
            elif takes or (takes is None and _looks_like_flag(flag) and not _looks_like_flag(nxt)):
                value = nxt
                i += 1
        elif value is None and takes is True:  # a SWITCH_OR_VALUE flag at the end is the switch
            problem = f"{flag} needs a value, but the command ends after it"
        if not _looks_like_flag(flag) and value is None and name is None:
            problem = f"{flag} belongs to no flag (a value without its flag?)"
        out.append(Arg(flag, value, name, _FLAGS[name][2] if name else None, problem))
        i += 1
    return program, out


def problems(argv: list[str]) -> list[str]:
    """Parts of a server command the server would reject or misread (a flag missing its value, a stray word)."""
    _, args = split_argv(argv)
    return [a.problem for a in args if a.problem]


def deviation_problems(whats: list[str], argv: list[str]) -> list[str]:
    """Stated deviations that begin with a flag the server command does not have ('--n-cpu-moe 16' on a command
    without --n-cpu-moe), each in words; none when the command was not given. Any spelling of a known flag
    counts ('-ncmoe 16' for '--n-cpu-moe 16'); a deviation that does not begin with a flag ('no --jinja') is
    not read.

    >>> deviation_problems(["--n-cpu-moe 16", "-ngl 32", "no --mlock"], ["llama-server", "--gpu-layers", "32"])
    ["the deviation '--n-cpu-moe 16' names --n-cpu-moe, which the server command does not have"]
    """
    if not command_given(argv):
        return []
    have = set(settings(argv)) | {_ALIAS.get(w, w.lstrip("-")) for w in argv if _looks_like_flag(w)}
    out = []
    for what in whats:
        m = re.match(r"\s*(--?[A-Za-z][\w-]{0,63})(?:=|\s|$)", what)
        if m and _ALIAS.get(m.group(1), m.group(1).lstrip("-")) not in have:
            out.append(f"the deviation '{what}' names {m.group(1)}, which the server command does not have")
    return out


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def settings(argv: list[str]) -> dict[str, str | bool]:
    """Canonical settings of an argv: {'ctx': '262144', 'slots': '4', 'kv_unified': True, ...}.

    Unknown flags are kept under their written name without dashes.
    """
    _, args = split_argv(argv)
    out: dict[str, str | bool] = {}
    for a in args:
        if a.problem:  # a flag without its value, or a stray word: no setting can be read from it
            continue
        key = a.name or a.flag.lstrip("-")
        out[key] = _SWITCH_MEANS.get(key, True) if a.value is None else a.value  # -fa as a switch is "on"
    return out


def server_settings(argv: list[str]) -> dict[str, str | bool]:
    """``settings`` of a server's command; {} for a benchmark tool's (llama-bench's argv sets no server flag)."""
    program = program_name(argv)
    return {} if "bench" in program else settings(argv)


def label(name: str) -> str:
    """Human name of a setting ('ctx' -> 'Context window (tokens)'); unknown flags as written."""
    return LABELS.get(name, f"--{name}" if not name.startswith("-") else name)


@dataclass(frozen=True)
class HostCache:
    """What a server command says about llama-server's host-RAM prompt cache (``--cache-ram``)."""

    state: str  # "off" | "on" | "default" (flag absent: on in current llama-server builds) | "n/a"
    mib: int | None  # the limit when given (-1 = no limit)
    text: str  # one sentence for the card


def host_cache(argv: list[str]) -> HostCache:
    """Detect ``--cache-ram`` / ``-cram`` in a server command (llama-server only)."""
    program = program_name(argv)
    value = settings(argv).get("cache_ram")
    if value is None:
        if "llama-server" not in program:
            return HostCache("n/a", None, "The server command is not llama-server's (or was not recorded); "
                                          "its host-RAM prompt cache is unknown.")
        return HostCache("default", None, "--cache-ram is not set: current llama-server builds keep an 8192 MiB "
                                          "host-RAM prompt cache by default (builds from before the option have "
                                          "none).")
    mib = as_int(value)
    if mib == 0:
        return HostCache("off", 0, "--cache-ram 0: the host-RAM prompt cache is off.")
    limit = "no limit" if mib == -1 else f"{mib:,} MiB" if mib is not None else str(value)
    return HostCache("on", mib, f"--cache-ram {value}: the host-RAM prompt cache is on ({limit}).")


def explain_env(name: str, value: str | None = None) -> str | None:
    """Explanation of a known environment variable; for a device list that names devices by UUID (or a
    placeholder such as '<GPU1-UUID>'), a note to put one's own there."""
    text = _ENV_EXPLAIN.get(name)
    if name in DEVICE_ENV and value and re.search(r"(?i)uuid|<|GPU-[0-9a-f]|MIG-", value):
        note = ("replace it with your own GPU's UUID (“nvidia-smi -L” lists them) or its number, e.g. 0: the "
                "value names a device of the machine that measured")
        return f"{text}; {note}" if text else note
    return text


def as_int(value: str | bool | None) -> int | None:
    """An integer setting (accepts 128k / 2K style suffixes), or None."""
    if value is None or isinstance(value, bool):
        return None
    v = value.strip().lower()
    mult = 1
    if v.endswith("k"):
        mult, v = 1024, v[:-1]
    try:
        return int(float(v) * mult)
    except (ValueError, OverflowError):  # not a number, NaN, or infinite
        return None


def env_words(env: dict[str, str] | None) -> str:
    """The environment of a command as the shell words before it ('' when none): every value quoted, and a
    name that is not a plain variable name passed through ``env``.

    >>> env_words({"CUDA_VISIBLE_DEVICES": "0", "odd name": "x y"})
    "CUDA_VISIBLE_DEVICES=0 env 'odd name=x y'"
    """
    plain = {k: v for k, v in (env or {}).items() if k.isidentifier() and k.isascii()}
    odd = {k: v for k, v in (env or {}).items() if k not in plain}
    return " ".join([*(f"{k}={shlex.quote(v)}" for k, v in plain.items()),
                     *(["env"] if odd else []), *(shlex.quote(f"{k}={v}") for k, v in odd.items())])


def shell_join(argv: list[str], env: dict[str, str] | None = None) -> str:
    """A copy-pasteable shell command, one flag per line (the wrapper words and the program on the first)."""
    cmd = split_command(argv)
    _, args = split_argv(argv)
    # every word from the data is quoted, flags and variable names too, so a pasted command runs exactly
    # the recorded argv and nothing else
    head = env_words(env)
    lines = [(head + " " if head else "") + " ".join(shlex.quote(w) for w in [*cmd.wrapper, *cmd.program])]
    for a in args:
        lines.append(f"  {shlex.quote(a.flag)}" + (f" {shlex.quote(a.value)}" if a.value is not None else ""))
    return " \\\n".join(lines)


def _may_offload(argv: list[str]) -> bool:
    """Whether ``settings`` could read an offload setting from this argv: each alias of ``n_cpu_moe``,
    ``cpu_moe`` and ``override_tensor`` (and an unknown flag spelled as one of those names) has 'moe' or
    'override' in it, or is '-ot'; each of ``n_gpu_layers`` has 'layers' in it, or is '-ngl'. A cheap test that
    never misses one; the overview asks it of every setup."""
    joined = "\0".join(argv)
    return "moe" in joined or "override" in joined or "layers" in joined or "-ot" in argv or "-ngl" in argv


def system_ram_offload(argv: list[str], *, layers: int | None = None, file_bytes: int | None = None,
                       gpu_gib: float | None = None) -> str | None:
    """What a server command keeps in system RAM instead of GPU memory, in words, or None.

    '--n-cpu-moe 23' -> 'expert weights of 23 layers (--n-cpu-moe 23)'; '--cpu-moe' -> all
    expert weights; an '-ot' / '--override-tensor' rule that sends tensors to the CPU -> that rule; on a setup
    with GPU memory (``gpu_gib``, all GPUs), '-ngl 32' below the model's ``layers`` -> 'layers after the first 32
    (-ngl 32)', and so when the layer count is unknown but the model file (``file_bytes``) is larger than the GPU
    memory ('-ngl 0': all layers). A peak GPU memory measured with such a command is only what the GPU holds:
    the setup needs the system RAM too. See docs/definitions.md#system-ram-offload.
    """
    if not _may_offload(argv):
        return None
    s = settings(argv)
    found = [_moe_offload(s), _layer_offload(s, layers, file_bytes, gpu_gib)]
    return "; ".join(f for f in found if f) or None


def _moe_offload(s: dict[str, str | bool]) -> str | None:
    """The expert offload of a command's settings in words (``--n-cpu-moe``, ``--cpu-moe``, ``-ot …CPU``)."""
    n = as_int(s.get("n_cpu_moe")) if isinstance(s.get("n_cpu_moe"), str) else None
    if n:
        return f"expert weights of {n:,} layers (--n-cpu-moe {n})"
    if s.get("cpu_moe") is True:
        return "all expert weights (--cpu-moe)"
    rule = s.get("override_tensor")
    if isinstance(rule, str) and "cpu" in rule.lower():
        return f"tensors matching {rule} (--override-tensor)"
    return None


def _layer_offload(s: dict[str, str | bool], layers: int | None, file_bytes: int | None,
                   gpu_gib: float | None) -> str | None:
    """The layers an explicit ``-ngl N`` leaves in system RAM on a setup with GPU memory, in words, or None:
    N below the model's layer count, or (layer count unknown) N = 0 or a model file larger than the GPU memory."""
    n = as_int(s.get("n_gpu_layers")) if isinstance(s.get("n_gpu_layers"), str) else None
    if n is None or n < 0 or n >= ALL_LAYERS_FROM or not gpu_gib or gpu_gib <= 0:
        return None  # not set, auto / all, or no GPU (then everything is in system RAM anyway)
    if layers is not None and layers > 0:
        partial = n < layers
    else:
        partial = n == 0 or (file_bytes is not None and file_bytes > gpu_gib * 2**30)
    if not partial:
        return None
    return "all layers (-ngl 0)" if n == 0 else f"layers after the first {n:,} (-ngl {n})"
