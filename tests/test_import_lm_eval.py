"""lm-evaluation-harness importer: per-task scores with Wilson margins, items from samples files."""

import json

import pytest

from benchcards.domain import stats
from benchcards.read import quality
from benchcards.read.store import Store
from ingest.importers import ImportFailed, Options, Source, convert, detect, plan
from ingest.importers.store import check, save
from tests.import_helpers import FIX, check_golden, figures, run

pytestmark = pytest.mark.unit

DATE = "2025-06-01T12-00-00.123456"
RESULTS = f"results_{DATE}.json"
SAMPLES = f"samples_gsm8k_{DATE}.jsonl"


def test_golden():
    results = run([RESULTS, SAMPLES])
    check_golden(RESULTS, results)
    assert check(results) == 1
    assert detect(Source(RESULTS, (FIX / RESULTS).read_bytes())) == ("lm-eval", "results")
    assert detect(Source(SAMPLES, (FIX / SAMPLES).read_bytes())) == ("lm-eval", "samples")


def _tests():
    c = run([RESULTS, SAMPLES])[0].setups[0].runs[0].contract
    return c, {t["test"]: t for t in c["tests"]}


def test_each_task_keeps_one_share_of_right_answers_with_n():
    c, tests = _tests()
    assert sorted(tests) == ["arc_challenge", "gsm8k", "ifeval", "mmlu_abstract_algebra", "mmlu_anatomy"]
    assert tests["arc_challenge"]["stated"] == {"n": 40, "right": 23, "pct": 57.5}
    assert "metric acc (none)" in tests["arc_challenge"]["description"]
    assert tests["ifeval"]["stated"]["right"] == 19 and tests["ifeval"]["token_limit"] == 1280
    unmapped = {u["field"]: u["reason"] for u in c["imported"]["unmapped"]}
    assert "group aggregate" in unmapped["$.results.mmlu"]
    assert "are not a share of right answers" in unmapped["$.results.wikitext"]
    assert "Wilson" in unmapped["$.results.arc_challenge.acc_stderr,none"]
    assert "one score per test (acc,none)" in unmapped["$.results.arc_challenge.acc_norm,none"]


def test_margins_follow_the_wilson_rule():
    c, _ = _tests()
    figs, _ = figures(c)
    iv = stats.wilson(23, 40)
    assert figs["arc_challenge|pct"] == pytest.approx(57.5)
    assert figs["arc_challenge|margin_pp"] == pytest.approx(100 * iv.half_width)


def test_samples_become_items_of_the_chosen_filter():
    raw = [json.loads(x) for x in (FIX / SAMPLES).read_text().splitlines()]
    strict = [r for r in raw if r["filter"] == "strict-match"]
    _, tests = _tests()
    items = tests["gsm8k"]["items"]
    assert [i["id"] for i in items] == [str(r["doc_id"]) for r in strict]
    assert [i["right"] for i in items] == [r["exact_match"] == 1.0 for r in strict]
    assert sum(i["right"] for i in items) == tests["gsm8k"]["stated"]["right"]


def test_gpu_engine_and_model_come_from_the_results():
    s = run([RESULTS])[0].setups[0].setup
    assert s["hardware"]["gpus"][0]["name"] == "NVIDIA GeForce RTX 4090"  # from pretty_env_info
    assert s["model"] == {"name": "Qwen3-8B", "repo": "Qwen/Qwen3-8B"}
    assert s["engine"]["name"] == "OpenAI-compatible server (local-chat-completions)"


def test_samples_without_their_results_file_are_refused():
    with pytest.raises(ImportFailed) as err:
        plan([Source(SAMPLES, (FIX / SAMPLES).read_bytes())])
    assert err.value.errors[0].startswith(SAMPLES + ": an lm-eval samples file needs its results")


def test_a_score_that_is_not_a_whole_count_is_not_mapped():
    raw = json.loads((FIX / RESULTS).read_text())
    raw["results"]["arc_challenge"]["acc,none"] = 0.5123
    raw["results"]["arc_challenge"].pop("acc_norm,none")
    res = convert([Source(RESULTS, json.dumps(raw).encode())])
    c = res[0].setups[0].runs[0].contract
    assert "arc_challenge" not in {t["test"] for t in c["tests"]}
    reason = {u["field"]: u["reason"] for u in c["imported"]["unmapped"]}["$.results.arc_challenge"]
    assert "not a whole number of right answers out of 40" in reason


@pytest.mark.integration
def test_two_setups_that_answered_the_same_items_compare_paired(tmp_path):
    a = run([RESULTS, SAMPLES], Options(gpu="NVIDIA GeForce RTX 4090", engine="llama.cpp"))
    b = run([RESULTS, SAMPLES], Options(gpu="NVIDIA GeForce RTX 3090", engine="llama.cpp"))
    db = tmp_path / "q.duckdb"
    save(a + b, db, tmp_path / "local")
    ids = sorted(s.setup_id for r in a + b for s in r.setups)
    cmp = {c.test: c for c in quality.compare_quality(Store(db), ids[0], ids[1])}
    assert cmp["gsm8k"].method == "McNemar (paired)" and cmp["gsm8k"].n_pairs == 20
    assert cmp["arc_challenge"].method == "Newcombe (independent)"


D2024 = "2024-07-02T09-15-30.120001"


def test_2024_samples_without_filter_key_become_items():
    """lm-eval 0.4.2/0.4.3 samples lines carry the metric's own key (acc) but no filter and no metrics key:
    detected and imported, as a file and inside a folder (issue 16, documented formats 7)."""
    folder = FIX / "lm-eval-2024"
    sample = folder / f"samples_svamp_{D2024}.jsonl"
    assert detect(Source(sample.name, sample.read_bytes())) == ("lm-eval", "samples")
    from ingest.importers import read_sources

    sources, _ = read_sources([folder])
    res = convert(sources, Options(gpu="NVIDIA GeForce RTX 3090"))
    c = res[0].setups[0].runs[0].contract
    (t,) = c["tests"]
    assert t["stated"] == {"n": 20, "right": 13, "pct": 65.0}
    assert len(t["items"]) == 20 and sum(i["right"] for i in t["items"]) == 13
    assert c["summary_only"] is False
    figs, _ = figures(c)
    assert figs["svamp|pct"] == 65.0 and figs["svamp|n"] == 20.0
    assert not any("skipped" in n for n in res[0].notes)


def test_v0_results_are_refused_with_the_reason_before_any_option():
    with pytest.raises(ImportFailed) as err:
        run("lm-eval-v0-results.json")
    (e,) = err.value.errors
    assert e.startswith("lm-eval-v0-results.json: $.results: results of lm-evaluation-harness before 0.4")
    assert "--model" not in e and "--gpu" not in e


def test_an_f1_task_is_refused_for_its_reason_not_for_its_samples_file():
    from ingest.importers import read_sources

    sources, _ = read_sources([FIX / "lm-eval-f1"])
    with pytest.raises(ImportFailed) as err:
        convert(sources, Options(gpu="NVIDIA L4"))
    (e,) = err.value.errors
    assert "results_2025-03-09T10-00-00.000001.json: $.results: no task could be mapped: ner_swa: f1 is not a " \
           "share of right answers" in e
    assert "samples_" not in e
