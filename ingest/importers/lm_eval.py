"""lm-evaluation-harness ``results_<date>.json`` (and ``samples_<task>_<date>.jsonl``) as quality contracts.

Per task of ``results`` (group aggregates are skipped: they are not tests of their own) benchcards
keeps one score: the first of the task's metrics that is a share of right answers (``acc``,
``exact_match``, ``prompt_level_strict_acc`` ... with its filter, e.g. ``exact_match,strict-match``).
The number of items is ``n-samples[task].effective``; right = score x n, which must come out a
whole number (otherwise the metric is not a plain share of items and the task is not mapped).
Margins are then computed with the same Wilson rule as every other quality test; lm-eval's own
``_stderr`` is not used. When the samples file of the task is given, each line (one per document
and filter) becomes an item (id = ``doc_id``, right = the metric's value is 1) so two setups that
answered the same documents can be compared paired.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from ingest.importers import hardware as hw
from ingest.importers.base import (
    BIG_MAX,
    BIG_MIN,
    Converted,
    ConvertedRun,
    ImportResult,
    Options,
    Source,
    as_dict,
    attachment,
    finite,
    import_info,
    parse_json,
    short_hash,
    slug,
    whole,
)
from ingest.importers.served import setup_document
from schemas.models import SCHEMA_VERSION

NAME = "lm-eval"
#: what ``python -m ingest --help`` lists beside the name
HELP = "lm-evaluation-harness results_<date>.json (+ samples_<task>_<date>.jsonl)"
IMPORTER = "lm-eval 1"
DEFAULT_VARIANT = "results"
#: metrics that are a share of right answers, in order of preference
SHARE_METRICS = ("acc", "exact_match", "prompt_level_strict_acc", "inst_level_strict_acc", "acc_norm",
                 "prompt_level_loose_acc", "pass@1", "em", "f1_exact")
ENGINE_OF = {"hf": "transformers", "hf-auto": "transformers", "huggingface": "transformers", "vllm": "vLLM",
             "sglang": "SGLang", "gguf": "llama.cpp", "ggml": "llama.cpp"}


def sniff(src: Source) -> str | None:
    """'results' for a results_*.json, 'samples' for a samples_*.jsonl of lm-evaluation-harness."""
    head = src.data[:65536].decode("utf-8", "replace").lstrip("\ufeff \n\t")
    if head.startswith("{") and '"results"' in head and ('"n-samples"' in head or '"versions"' in head
                                                          or '"lm_eval_version"' in head or '"n-shot"' in head):
        return "results"
    first = head.split("\n", 1)[0]
    # 0.4 samples carry filter and metrics; 2024 ones (0.4.2/0.4.3) have neither, only the metric's own key
    if first.startswith("{") and '"doc_id"' in first and (('"filter"' in first and '"metrics"' in first)
                                                          or ('"resps"' in first or '"arguments"' in first)):
        return "samples"
    return None


def _load_results(src: Source) -> dict[str, Any]:
    obj = src.json()
    if not isinstance(obj, dict) or not isinstance(obj.get("results"), dict):
        raise src.fail("$.results", "expected an object of task -> metrics (lm-evaluation-harness results)")
    return obj


def _refuse_v0(src: Source, obj: dict[str, Any]) -> None:
    """Refuse a results file of lm-eval before 0.4 with the reason (it never says how many items were scored,
    so no share of right answers can be counted); raised before anything asks for an option."""
    tasks = [m for m in obj["results"].values() if isinstance(m, dict)]
    if tasks and "n-samples" not in obj and not any("," in k for m in tasks for k in m):
        raise src.fail("$.results", "results of lm-evaluation-harness before 0.4 (metric keys without a filter, "
                                    "no n-samples): the file does not say how many items were scored, so the "
                                    "right answers cannot be counted; run the task again with lm-eval 0.4 or later")


def _task_of(sample: Source) -> str | None:
    m = re.match(r"^samples_(.+)_\d{4}-\d{2}-\d{2}T[0-9-]+(?:\.\d+)?\.jsonl?$", sample.basename)
    return m.group(1) if m else None


def _samples(src: Source) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, sample) of every non-blank line, one at a time: a samples file holds every prompt and
    answer (often 100 MB), and only a few keys of each line are kept, so lines are never all in memory."""
    src.check_size()
    data = memoryview(src.data)
    start, n = 0, 0
    while start < len(data):
        end = src.data.find(b"\n", start)
        end = len(data) if end < 0 else end
        n += 1
        line = bytes(data[start:end])
        start = end + 1
        if not line.strip():
            continue
        obj = parse_json(f"{src.name}: line {n}", line)
        if not isinstance(obj, dict) or "doc_id" not in obj:
            raise src.fail(f"line {n}", "expected a sample object with doc_id")
        yield n, obj


def _pick_metric(src: Source, task: str, metrics: dict[str, Any], n: int) -> tuple[str, str, float, int] | str:
    """(metric, filter, value, right) of the task's share-of-right metric, or why none fits."""
    keys = [k for k in metrics if "," in k and "_stderr" not in k.split(",")[0]]
    by_name: dict[str, list[str]] = {}
    for k in keys:
        by_name.setdefault(k.split(",", 1)[0], []).append(k)
    for name in SHARE_METRICS:
        for k in by_name.get(name, []):
            v = metrics[k]
            if not finite(v) or not 0 <= v <= 1:
                continue
            right = round(v * n)
            if abs(right / n - v) > 1e-6:
                return (f"{k} = {v} is not a whole number of right answers out of {n} (a mean of partial "
                        "scores?)")
            return name, k.split(",", 1)[1], float(v), right
    names = sorted(by_name)
    return (f"{', '.join(names) or 'no metric'} {'is' if len(names) == 1 else 'are'} not a share of right answers "
            "(a score such as F1 or BLEU cannot be counted as right / n), so the task has no quality figure")


def _engine(config: dict[str, Any], opts: Options, assumed: list[dict[str, str]]) -> dict[str, Any]:
    model_type = str(config.get("model") or "")
    if opts.engine:
        name = opts.engine
    elif model_type in ENGINE_OF:
        name = ENGINE_OF[model_type]
        assumed.append({"field": "engine.name", "value": name, "source": f"lm-eval model type {model_type!r}"})
    else:
        name = f"OpenAI-compatible server ({model_type})" if model_type else "unknown engine"
        assumed.append({"field": "engine.name", "value": name, "source": "default (pass --engine to name it)"})
    engine: dict[str, Any] = {"name": name}
    if opts.engine_version:
        engine["version"] = opts.engine_version
    return engine


def _model_name(config: dict[str, Any], obj: dict[str, Any]) -> tuple[str | None, str | None]:
    """(display name, repository id) from model_args / model_name."""
    args = config.get("model_args")
    found = None
    if isinstance(args, dict):
        found = args.get("pretrained") or args.get("model") or args.get("path")
    elif isinstance(args, str):
        m = re.search(r"(?:^|,)\s*(?:pretrained|model|path)=([^,]+)", args)
        found = m.group(1).strip() if m else None
    found = found or obj.get("model_name")
    if not isinstance(found, str) or not found.strip():
        return None, None
    found = found.strip()
    repo = found if re.match(r"^[\w.-]+/[\w.-]+$", found) else None
    return found.rstrip("/").rsplit("/", 1)[-1], repo


def _gpu_from_env(obj: dict[str, Any]) -> list[str] | None:
    env = obj.get("pretty_env_info")
    if not isinstance(env, str):
        return None
    names = re.findall(r"GPU \d+: ([^\n]+?)\s*$", env, re.M)
    if names:
        return [n.strip() for n in names]
    m = re.search(r"GPU models and configuration: ([^\n]+)", env)
    if m and m.group(1).strip() not in ("", "No CUDA", "Could not collect"):
        return [m.group(1).strip()]
    return None


def convert(sources: list[Source], opts: Options, variant: str | None = None) -> ImportResult:
    """Convert one lm-eval run: the results file first, then any samples files of it; pure."""
    results = [s for s in sources if sniff(s) != "samples"]
    samples = [s for s in sources if s not in results]
    if len(results) != 1:
        raise (sources[0].fail("files", "an lm-eval import takes one results_<date>.json (with its samples files)"))
    src = results[0]
    obj = _load_results(src)
    notes: list[str] = []
    assumed: list[dict[str, str]] = []
    unmapped: list[dict[str, str]] = []
    _refuse_v0(src, obj)
    config = as_dict(obj.get("config"))
    name, repo = _model_name(config, obj)
    if opts.model:
        name = opts.model
    if not name:
        raise src.fail("$.config.model_args", "the results do not name the model: pass --model NAME")
    hardware = hw.hardware(src, opts, _gpu_from_env(obj), assumed=assumed, what="the lm-eval results")
    engine = _engine(config, opts, assumed)
    sample_files = _sample_files(samples)
    tests = _tests(src, obj, config, sample_files, unmapped, notes)
    if not tests:
        raise src.fail("$.results", "no task could be mapped: " + "; ".join(
            f"{u['field'].removeprefix('$.results.')}: {u['reason']}" for u in unmapped[:5]))
    for task, s in sample_files.items():
        why = next((u["reason"] for u in unmapped if u["field"] == f"$.results.{task}"), None)
        raise s.fail("task", f"{task!r} is not mapped in {src.basename}: {why}" if why else
                     f"{task!r} has no mapped result in {src.basename}")
    argv = list(opts.server_cmd) if opts.server_cmd else [f"{engine['name']} (command not given)"]
    assumed.append({"field": "server.argv", "value": " ".join(argv)[:200],
                    "source": "--server-cmd" if opts.server_cmd else "default (lm-eval does not record it)"})
    started = _started(obj)
    setup = _setup(src, opts, name, _model(name, repo, config), hardware, engine, argv, started)
    atts, att_list = _attachments(src, samples)
    contract = _contract(src, obj, samples, setup["setup_id"], tests, att_list, started, assumed, unmapped)
    conv = Converted(setup=setup, runs=[ConvertedRun("quality", contract, atts)])
    notes.append(f"{src.name}: {len(tests)} test(s), {sum(1 for t in tests if 'items' in t)} with per-item "
                 f"samples, {len(unmapped)} field(s) not mapped")
    return ImportResult(format=f"{NAME}/{'results+samples' if samples else 'results'}",
                        sources=[s.name for s in sources], setups=[conv], notes=notes)


def _sample_files(samples: list[Source]) -> dict[str, Source]:
    """Task -> its samples file, the task read from the file's name."""
    sample_files: dict[str, Source] = {}
    for s in samples:
        task = _task_of(s)
        if task is None:
            raise s.fail("name", "expected samples_<task>_<date>.jsonl (the task is read from the name)")
        sample_files[task] = s
    return sample_files


def _tests(src: Source, obj: dict[str, Any], config: dict[str, Any], sample_files: dict[str, Source],
           unmapped: list[dict[str, str]], notes: list[str]) -> list[dict[str, Any]]:
    """One test per mapped task of ``results`` (the samples file of each used is taken out of ``sample_files``);
    what is not mapped goes to ``unmapped``."""
    groups = set()
    gs = obj.get("group_subtasks")
    if isinstance(gs, dict):
        groups = {g for g, subs in gs.items() if isinstance(subs, list) and subs}
    n_samples = as_dict(obj.get("n-samples"))
    tests: list[dict[str, Any]] = []
    used_tests: set[str] = set()
    for task, metrics in sorted(obj["results"].items()):
        where = f"$.results.{task}"
        if task in groups:
            unmapped.append({"field": where, "reason": "a group aggregate of its subtasks, not a test of its own"})
            continue
        if not isinstance(metrics, dict):
            raise src.fail(where, "expected an object of metric -> value")
        count = as_dict(n_samples.get(task))
        n = count.get("effective") if isinstance(count, dict) else None
        if n is None:
            n = metrics.get("sample_len")
        n = whole(n, 1)
        if n is None:
            unmapped.append({"field": where, "reason": "the number of items (n-samples.effective) is not given"})
            continue
        pick = _pick_metric(src, task, metrics, n)
        if isinstance(pick, str):
            unmapped.append({"field": where, "reason": pick})
            continue
        metric, filt, value, right = pick
        for k in sorted(metrics):
            if k in ("alias", "name", "sample_len", "sample_count") or k == f"{metric},{filt}":
                continue
            unmapped.append({"field": f"{where}.{k}", "reason": "lm-eval's standard error; margins are Wilson "
                             "intervals from right / n" if "_stderr" in k else "another metric of the task; "
                             f"benchcards keeps one score per test ({metric},{filt})"})
        test_id = slug(task, 100)
        if test_id in used_tests:
            test_id = f"{test_id[:90]}-{short_hash(task, n=6)}"
        used_tests.add(test_id)
        test = _test(obj, config, task, test_id, metrics, (metric, filt, value, right), n)
        if task in sample_files:
            test["items"] = _items(sample_files.pop(task), metric, filt)
            if len(test["items"]) != n:
                notes.append(f"{task}: {len(test['items'])} samples for n = {n}")
        tests.append(test)
    return tests


def _test(obj: dict[str, Any], config: dict[str, Any], task: str, test_id: str, metrics: dict[str, Any],
          pick: tuple[str, str, float, int], n: int) -> dict[str, Any]:
    """The test of one mapped task: its score, description, token limit, sampling and seed."""
    metric, filt, value, right = pick
    versions = as_dict(obj.get("versions"))
    nshot = as_dict(obj.get("n-shot"))
    cfg = as_dict(as_dict(obj.get("configs")).get(task))
    gen = as_dict(cfg.get("generation_kwargs"))
    desc = (f"lm-evaluation-harness task {task}" + (f" v{versions[task]}" if versions.get(task) is not None
                                                      else "") + (f", {nshot[task]}-shot" if
                                                                  isinstance(nshot.get(task), int) else "")
            + f", metric {metric} ({filt})")
    test: dict[str, Any] = {"test": test_id, "label": str(metrics.get("alias") or task).strip() or task,
                            "description": desc, "status": "ok",
                            "stated": {"n": n, "right": right, "pct": round(100 * value, 6)}}
    limit = whole(gen.get("max_gen_toks"))
    if limit is not None:
        test["token_limit"] = limit
    sampling = {k: gen[k] for k in ("temperature", "top_p", "top_k") if finite(gen.get(k))
                and gen[k] >= 0 and (k != "top_p" or gen[k] <= 1) and (k != "top_k" or isinstance(gen[k], int))}
    if sampling:
        test["sampling"] = sampling
    seed = whole(config.get("random_seed"), BIG_MIN, BIG_MAX)
    if seed is not None:
        test["seed"] = seed
    return test


def _model(name: str, repo: str | None, config: dict[str, Any]) -> dict[str, Any]:
    """The setup's model: name, repository, revision, size and quantisation where the results give them."""
    model: dict[str, Any] = {"name": name}
    if repo:
        model["repo"] = repo
    for k, field in (("model_revision", "revision"),):
        if isinstance(config.get(k), str) and config[k] and config[k] != "main":
            model[field] = config[k]
    params = whole(config.get("model_num_parameters"), 1, BIG_MAX)
    if params is not None:
        model["params_total_b"] = round(params / 1e9, 3)
    _, quant, _ = hw.split_model_file(name)
    if quant:
        model["quant"] = quant
    return model


def _started(obj: dict[str, Any]) -> str | None:
    """When the run started (the results' ``date``, a Unix time), as an ISO time in UTC."""
    date = obj.get("date")
    if finite(date) and 1e9 < date < 1e10:
        return datetime.fromtimestamp(date, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return None


def _setup(src: Source, opts: Options, name: str, model: dict[str, Any], hardware: dict[str, Any],
           engine: dict[str, Any], argv: list[str], started: str | None) -> dict[str, Any]:
    """The setup document; its id is a digest of hardware, model, engine and command."""
    setup = setup_document(opts, name, hardware, model, engine, argv, "lm-eval", "lm-eval",
                           f"imported from lm-evaluation-harness results {src.basename}")
    setup["measured_at"] = [started[:10]] if started else []
    if opts.measured_by:
        setup["measured_by"] = opts.measured_by
    return setup


def _contract(src: Source, obj: dict[str, Any], samples: list[Source], setup_id: str, tests: list[dict[str, Any]],
              att_list: list[dict[str, Any]], started: str | None, assumed: list[dict[str, str]],
              unmapped: list[dict[str, str]]) -> dict[str, Any]:
    """The quality contract of the run."""
    tool = "lm-evaluation-harness" + (f" {obj['lm_eval_version']}" if isinstance(obj.get("lm_eval_version"), str)
                                      else "") + (f" ({obj['git_hash']})" if isinstance(obj.get("git_hash"), str)
                                                  else "")
    contract: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "kind": "quality", "run_id": f"{setup_id[:100]}-{src.sha256[:8]}",
        "setup_id": setup_id, "summary_only": not any("items" in t for t in tests), "tool": tool,
        "source": f"lm-evaluation-harness results {src.basename}", "tests": tests, "attachments": att_list,
        "imported": import_info(NAME + ("/results+samples" if samples else "/results"), src, IMPORTER, tool,
                                assumed, unmapped),
    }
    if started:
        contract["started_at"] = started
    return contract


def _attachments(src: Source, samples: list[Source]) -> tuple[dict[str, bytes], list[dict[str, Any]]]:
    """The original files as attachments: (name -> bytes, their entries in the contract)."""
    files = {src: "original lm-eval results"} | {s: "original lm-eval samples" for s in samples}
    atts = {}
    att_list = []
    for s, desc in files.items():
        att_name = re.sub(r"[^A-Za-z0-9._+-]", "_", s.basename).lstrip(".")[:120] or "results.json"
        atts[att_name] = s.data
        att_list.append(attachment(att_name, s.data, desc))
    return atts, att_list


def _items(src: Source, metric: str, filt: str) -> list[dict[str, Any]]:
    items = []
    for n, obj in _samples(src):
        if obj.get("filter", "none") != filt:
            continue
        v = obj.get(metric)
        if isinstance(v, bool):
            right = v
        elif finite(v) and v in (0, 1):
            right = bool(v)
        else:
            raise src.fail(f"line {n}.{metric}", f"expected 0 or 1 (right or wrong), got {str(v)[:40]!r}")
        items.append({"id": str(obj["doc_id"])[:200] or "0", "right": right})
    if not items:
        raise src.fail(metric, f"no samples with filter {filt!r} and metric {metric!r}")
    return items
