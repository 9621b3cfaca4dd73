"""Settings declared once (live/settings.py): the command line, the runners, the Run live page, the contract's
method block and the card's reproduce command all come from the same models, so they cannot drift apart."""

from __future__ import annotations

import argparse
import shlex
import sys

import pytest

from live.__main__ import build_parser
from live.fit import FitConfig
from live.measure import MeasureConfig
from live.quality import QualityConfig
from live.settings import (
    METHOD_FIELDS,
    SWEEP_SPEED,
    SWEEP_SPEED_FIELDS,
    FitSettings,
    OutputSettings,
    QualitySettings,
    SamplingSettings,
    SetupSettings,
    SpeedSettings,
    SweepSettings,
    TargetSettings,
    flag_of,
    from_args,
    page_default,
    page_limits,
    to_argv,
    tokens_text,
)
from live.sweep import SweepConfig
from schemas.models import SpeedMethod
from tests.live_servers import demo_server

pytestmark = pytest.mark.unit

#: a command whose program exists (a missing one is its own usage error, checked before anything starts)
REQUIRED = {"fit": ["--server-cmd", "true -c {ctx}"], "sweep": ["--server-cmd", "true -c {ctx}"]}
SETUP_ALL = [f for f in SetupSettings.model_fields]
#: the sampling options: one model, the same in measure, quality, fit and sweep
SAMPLING = (SamplingSettings, list(SamplingSettings.model_fields))
#: every subcommand: the models (and the fields of each) its options come from
COMMANDS: dict[str, list[tuple[type, list[str]]]] = {
    "measure": [(TargetSettings, list(TargetSettings.model_fields)), (SpeedSettings, list(SpeedSettings.model_fields)),
                (OutputSettings, list(OutputSettings.model_fields)), (SetupSettings, SETUP_ALL), SAMPLING],
    "quality": [(TargetSettings, list(TargetSettings.model_fields)),
                (QualitySettings, list(QualitySettings.model_fields)), (OutputSettings, list(OutputSettings.model_fields)),
                (SetupSettings, [f for f in SETUP_ALL if f not in ("server_log", "attach")]), SAMPLING],
    "fit": [(FitSettings, list(FitSettings.model_fields)), (OutputSettings, list(OutputSettings.model_fields)),
            (SetupSettings, [f for f in SETUP_ALL if f not in ("server_cmd", "server_log", "attach")]), SAMPLING],
    "sweep": [(SweepSettings, list(SweepSettings.model_fields)), (SpeedSettings, list(SWEEP_SPEED_FIELDS)),
              (OutputSettings, ["out"]),
              (SetupSettings, ["setup_id", "title", "gpu", "vram_gib", "cpu", "model_name", "quant", "measured_by"]),
              SAMPLING],
}


def subparser(name: str) -> argparse.ArgumentParser:
    actions = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return actions.choices[name]


def parsed(name: str, *argv: str) -> argparse.Namespace:
    return build_parser().parse_args([name, *REQUIRED.get(name, []), *argv])


# --------------------------------------------------------------------------- every field is an option

@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_model_field_is_an_option_of_its_command_with_the_model_help(name):
    options = {a.dest: a for a in subparser(name)._actions}
    for model, fields in COMMANDS[name]:
        for field in fields:
            assert field in options, f"{name}: {model.__name__}.{field} has no option"
            action = options[field]
            assert flag_of(model, field) in action.option_strings
            assert action.help, f"{name} {flag_of(model, field)} has no help"
    declared = {f for _, fields in COMMANDS[name] for f in fields} | {"help", "func"}
    assert set(options) - declared == set(), "an option that no settings model declares"


# --------------------------------------------------------------------------- defaults: CLI == model == runner

def test_measure_defaults_on_the_command_line_are_the_models_and_the_runners():
    args = parsed("measure")
    speed, problems = from_args(SpeedSettings, args)
    target, more = from_args(TargetSettings, args)
    assert not problems and not more
    assert SpeedSettings(**speed) == SpeedSettings()
    assert TargetSettings(**target) == TargetSettings()
    runner = MeasureConfig()
    for field in (*SpeedSettings.model_fields, *TargetSettings.model_fields):
        assert getattr(runner, field) == getattr(SpeedSettings(), field, getattr(TargetSettings(), field, None))
    assert args.runs == 2 and args.prefill_depths == "2048,8192,32768" and args.thinking == "off"
    out = from_args(OutputSettings, args)[0]
    assert out == OutputSettings.defaults() | {"ingest": False}


def test_fit_quality_and_sweep_defaults_on_the_command_line_are_their_runners():
    fit, problems = from_args(FitSettings, parsed("fit"))
    assert not problems
    assert FitConfig(**fit) == FitConfig(server_cmd=REQUIRED["fit"][1])
    assert FitConfig().sizes == FitSettings().sizes == (4096, 8192, 16384, 32768, 65536, 131072, 262144)
    from live.quality_cli import _config

    cli, problems = _config(parsed("quality", "--tests", "arith:5"))
    assert not problems and isinstance(cli, QualityConfig)
    library = QualityConfig(tests=cli.tests)
    assert cli == library
    assert (library.in_flight, library.seed, library.read_timeout, library.default_max_tokens) == (4, 42, 120.0, 1024)
    args = parsed("sweep")
    sweep = SweepSettings(**from_args(SweepSettings, args)[0])
    speed = SpeedSettings(**from_args(SpeedSettings, args, only=SWEEP_SPEED_FIELDS)[0])
    library = SweepConfig(server_cmd="x", variants=[])
    assert (library.repeats, library.ctx, library.load_timeout_s) == (sweep.repeats, sweep.ctx, sweep.load_timeout_s)
    assert speed == SpeedSettings(**SWEEP_SPEED)
    assert library.measure == MeasureConfig(**SWEEP_SPEED)
    assert speed.parts == ("decode",) and speed.conc_max_tokens == 128


@pytest.mark.parametrize("name", ["measure", "quality", "fit", "sweep"])
def test_measure_quality_fit_and_sweep_take_the_same_sampling_options_with_the_same_defaults_and_help(name):
    """One definition (SamplingSettings): the same flags, defaults and help in the four commands, the defaults
    are what every runner sends, and a value given reads back to the model's."""
    from live.settings import LIVE_SAMPLING, sampling_from_args

    helps = {a.dest: a.help for a in subparser("measure")._actions if a.dest in SamplingSettings.model_fields}
    assert helps == {a.dest: a.help for a in subparser(name)._actions if a.dest in SamplingSettings.model_fields}
    assert sampling_from_args(parsed(name)) == (SamplingSettings(), [])
    assert LIVE_SAMPLING == {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "seed": 42}  # stored runs keep meaning
    from live.generators import parse_tests

    quality = QualityConfig(tests=tuple(parse_tests("arith:5")))
    assert MeasureConfig().sampling == quality.measure_config().sampling == LIVE_SAMPLING
    assert FitConfig(server_cmd="x").sampling.sent() == LIVE_SAMPLING
    odd = SamplingSettings(temperature=0, top_p=1, top_k=0, min_p=0.05, repeat_penalty=1.1, seed=7, source="mine")
    assert sampling_from_args(parsed(name, *to_argv(odd))) == (odd, [])
    assert "--top-p: 2.0 — input should be less than or equal to 1" in sampling_from_args(parsed(name, "--top-p",
                                                                                                 "2"))[1]


def test_bad_values_are_refused_naming_the_flag(capsys):
    assert build_parser().parse_args(["measure", "--runs", "0", "--gpu", "cpu"]).func is not None
    from live.__main__ import main

    assert main(["measure", "--runs", "0", "--agent-tokens", "1K,2K", "--gpu", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "error: --agent-tokens: give one number of tokens" in err
    assert main(["measure", "--runs", "0", "--timeout", "-1", "--gpu", "cpu"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["error: --runs: 0 — input should be greater than or equal to 1",
                   "error: --timeout: -1.0 — input should be greater than 0"]
    with pytest.raises(ValueError, match="--conc-rounds: True"):
        MeasureConfig(conc_rounds=True)  # a bool is not a count
    assert main(["fit", "--server-cmd", "x -c {ctx}", "--gpu-index", "a", "--gpu", "cpu"]) == 2
    assert "error: --gpu-index: whole numbers, e.g. 0 or 0,1" in capsys.readouterr().err



@pytest.mark.parametrize("cmd", ["fit", "sweep"])
@pytest.mark.parametrize("value", ["nan", "inf", "-5", "0"])
def test_a_load_timeout_that_is_not_a_finite_positive_time_is_refused(capsys, tmp_path, cmd, value):
    """From the hostile review: nan waited forever for the server, a negative time failed every boot at once."""
    from live.__main__ import main

    extra = ["--variant", "a=", "--variant", "b=-t 1"] if cmd == "sweep" else []
    assert main([cmd, *REQUIRED[cmd], *extra, "--load-timeout", value, "--gpu", "cpu", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: --load-timeout: "), err
    assert not any(tmp_path.iterdir())  # nothing started or written
    with pytest.raises(ValueError, match="load_timeout_s"):
        FitConfig(server_cmd="x -c {ctx}", load_timeout_s=float(value))
    assert SweepConfig("x -c {ctx}", [], load_timeout_s=float(value)).problems()[-1].startswith("--load-timeout: ")


@pytest.mark.parametrize(("argv", "line"), [
    (["measure", "--parts", "conc", "--conc-levels", "1,1"], "--conc-levels: 1 given more than once"),
    (["measure", "--prefill-depths", "512,512"], "--prefill-depths: 512 given more than once"),
    (["measure", "--prompts", "code,prose,code"], "--prompts: code given more than once"),
    (["measure", "--parts", "ctx", "--ctx-depths", "16K,16384"], "--ctx-depths: 16384 given more than once"),
    (["fit", *REQUIRED["fit"], "--sizes", "4096,8K,4K"], "--sizes: 4096 given more than once"),
    (["sweep", *REQUIRED["sweep"], "--variant", "a=", "--variant", "b=-t 1", "--conc-levels", "2,2"],
     "--conc-levels: 2 given more than once"),
])
def test_a_value_given_twice_is_refused_naming_its_flag(capsys, tmp_path, argv, line):
    """From the hostile review: a repeated level or depth was measured twice and stored a wrong total, and fit's
    repeated size ran both boots and then wrote a contract that ingest refuses."""
    from live.__main__ import main

    assert main([*argv, "--gpu", "cpu", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"error: {line} — give each value once"]
    assert not any(tmp_path.iterdir())
    with pytest.raises(ValueError, match="--conc-levels: 4 given more than once"):
        MeasureConfig(conc_levels=(4, 2, 4))  # the Run live page builds the same model

# --------------------------------------------------------------------------- the contract's method block

def test_method_fields_are_the_contracts_names_and_to_argv_reads_back():
    assert set(METHOD_FIELDS) <= set(SpeedMethod.model_fields)  # same names, same meaning: no mapping to drift
    assert set(METHOD_FIELDS) <= set(SpeedSettings.model_fields)
    # what the runner records is exactly the method fields: the rest only bound how long the client waits
    assert set(SpeedSettings.model_fields) - set(METHOD_FIELDS) == {"read_timeout", "min_decode_tps",
                                                                    "min_prefill_tps"}
    odd = SpeedSettings(parts=("decode", "agent"), prompt_ids=("prose",), runs=5, warmups=0, agent_tokens=4096,
                        agent_endpoints=("messages",), thinking=None, prefill_depths=(1000, 3072), read_timeout=7.5)
    args = build_parser().parse_args(["measure", *to_argv(odd)])
    assert SpeedSettings(**from_args(SpeedSettings, args)[0]) == odd
    fit = FitSettings(server_cmd="a -c {ctx}", sizes=(4096,), add_verbosity=False, gpu_indices=(0, 2), keep_going=True)
    args = build_parser().parse_args(["fit", *to_argv(fit)])
    assert FitSettings(**from_args(FitSettings, args)[0]) == fit


# --------------------------------------------------------------------------- the round trip

def test_a_measured_runs_reproduce_command_parses_back_to_its_settings(tmp_path):
    from benchcards.read import card_data
    from benchcards.read.store import Store
    from benchcards.views import reproduce_steps
    from live.__main__ import main

    given = ["--parts", "decode,prefill,conc,agent", "--prompts", "prose", "--runs", "1", "--warmups", "0",
             "--max-tokens", "24", "--min-decode-tokens", "8", "--prefill-depths", "512,1K", "--prefill-runs", "1",
             "--prefill-max-tokens", "4", "--conc-levels", "1,2", "--conc-rounds", "1", "--conc-max-tokens", "16",
             "--agent-turns", "2", "--agent-tokens", "2K", "--agent-max-tokens", "4", "--agent-endpoints", "chat",
             "--thinking", "auto"]
    setup = ["--gpu", "RTX 4090", "--vram-gib", "24", "--gpu-count", "2", "--quant", "Q4_K_M", "--title", "round trip",
             "--model-name", "tiny", "--setup-id", "round-trip"]
    db = tmp_path / "db.duckdb"
    server = demo_server(slots=4, ctx=65536, **{"decode-tps": 2000, "prefill-tps": 200000})
    try:
        rc = main(["measure", "--base-url", server.url, *given, *setup, "--out", str(tmp_path / "out"), "--ingest",
                   "--db", str(db)])
    finally:
        server.stop()
    assert rc == 0
    card = card_data.card(Store(db), "round-trip")
    [(_run, command)] = reproduce_steps.reproduce(card).measure.items()
    argv = shlex.split(command.replace("\\\n", " "))
    assert argv[:4] == ["python", "-m", "live", "measure"]
    back = build_parser().parse_args(argv[3:])
    want = build_parser().parse_args(["measure", *given, *setup])
    for model in (SpeedSettings, SetupSettings):
        fields = METHOD_FIELDS if model is SpeedSettings else [
            "gpu", "vram_gib", "gpu_count", "quant", "model_name"]
        got, expected = from_args(model, back, fields)[0], from_args(model, want, fields)[0]
        assert got == expected, (command, sys.version)
    assert back.title == "round trip (demo server)" and back.ingest  # the same title: it does not grow


def test_a_memory_tests_reproduce_command_parses_back_to_its_settings(tmp_path):
    """The card's ``python -m live fit`` command (generated from FitSettings) gives back the settings the test
    ran with: its template as typed, its sizes, fill, answer limit, keep-going and memory source."""
    from benchcards.read import card_data
    from benchcards.read.store import Store
    from benchcards.views import reproduce_steps
    from live.__main__ import main

    template = (f"{shlex.quote(sys.executable)} -m live demo-server -c {{ctx}} --slots 1 --prefill-tps 20000 "
                "--decode-tps 400 --load-s 0.2 --refuse-above 2048")  # 4K and 8K do not load
    given = ["--server-cmd", template, "--sizes", "2K,4K,8K", "--fill", "90", "--max-tokens", "24", "--keep-going",
             "--memory", "none"]
    setup = ["--gpu", "cpu", "--title", "fit round trip", "--setup-id", "fit-round-trip", "--quant", "Q4_K_M"]
    db = tmp_path / "db.duckdb"
    assert main(["fit", *given, *setup, "--out", str(tmp_path / "out"), "--ingest", "--db", str(db)]) == 0
    card = card_data.card(Store(db), "fit-round-trip")
    command = reproduce_steps.reproduce(card).fit or ""
    argv = shlex.split(command.replace("\\\n", " "))
    assert argv[:4] == ["python", "-m", "live", "fit"]
    back = build_parser().parse_args(argv[3:])
    want = build_parser().parse_args(["fit", *given, *setup])
    assert FitSettings(**from_args(FitSettings, back)[0]) == FitSettings(**from_args(FitSettings, want)[0])
    fields = ["gpu", "quant"]
    assert from_args(SetupSettings, back, fields)[0] == from_args(SetupSettings, want, fields)[0]
    assert back.title == "fit round trip (demo server)" and back.ingest  # the setup's title: the repeat joins it


def test_a_live_quality_runs_reproduce_command_parses_back_to_its_settings(tmp_path):
    """The card's ``python -m live quality`` command (generated from QualitySettings) gives back the settings of
    the run: its generated tests, their answer limits, requests at once, seed, temperature and thinking."""
    from benchcards.read import card_data
    from benchcards.read.store import Store
    from benchcards.views import reproduce_steps
    from live.__main__ import main

    given = ["--tests", "needle:1K:2,arith:3", "--max-tokens", "64", "--max-tokens", "arith=16", "--in-flight", "2",
             "--seed", "7", "--temperature", "0.5", "--top-k", "5", "--thinking", "off"]
    setup = ["--gpu", "cpu", "--title", "quality round trip", "--setup-id", "quality-round-trip"]
    db = tmp_path / "db.duckdb"
    server = demo_server(**{"decode-tps": 2000, "prefill-tps": 200000})
    try:
        rc = main(["quality", "--base-url", server.url, *given, *setup, "--out", str(tmp_path / "out"), "--ingest",
                   "--db", str(db)])
    finally:
        server.stop()
    assert rc in (0, 1)  # a wrong answer is a result
    card = card_data.card(Store(db), "quality-round-trip")
    [(_run, command)] = reproduce_steps.reproduce(card).quality.items()
    argv = shlex.split(command.replace("\\\n", " "))
    assert argv[:4] == ["python", "-m", "live", "quality"]
    back, want = build_parser().parse_args(argv[3:]), build_parser().parse_args(["quality", *given, *setup])
    got, expected = from_args(QualitySettings, back)[0], from_args(QualitySettings, want)[0]
    from live.settings import parse_max_tokens

    limits = {"needle_1k": 64, "arith": 16}  # per test, as the run recorded them (the default applied to each)
    assert parse_max_tokens(list(got.pop("max_tokens")))[1] == limits
    expected.pop("max_tokens")
    # the same tests (the card lists them by id, not in the order they were typed)
    assert set(got.pop("tests").split(",")) == set(expected.pop("tests").split(","))
    assert got == expected, command
    assert from_args(SamplingSettings, back)[0] == from_args(SamplingSettings, want)[0], command


# --------------------------------------------------------------------------- the Run live page

def test_the_run_live_forms_start_from_the_model_defaults(demo_db, monkeypatch):
    from live.progress import parse_counts, parse_tokens
    from tests.test_app import run

    monkeypatch.setenv("BENCHCARDS_DB", str(demo_db))
    at = run("pages/6_Run_live.py")
    speed = SpeedSettings()
    assert at.text_input(key="live_base_url").value == page_default(TargetSettings, "base_url") == \
        "http://127.0.0.1:8089"  # the page's own: the demo server it suggests
    assert tuple(at.multiselect(key="live_parts").value) == speed.parts
    for key, field in (("live_runs", "runs"), ("live_max_tokens", "max_tokens"),
                       ("live_min_tokens", "min_decode_tokens"), ("live_rounds", "conc_rounds")):
        widget = at.number_input(key=key)
        assert widget.value == getattr(speed, field) and (widget.min, widget.max) == page_limits(SpeedSettings, field)
    assert parse_tokens(at.text_input(key="live_depths").value, "x") == speed.prefill_depths
    assert parse_tokens(at.text_input(key="live_ctx_depths").value, "x") == speed.ctx_depths
    assert parse_counts(at.text_input(key="live_levels").value, "x") == speed.conc_levels
    assert at.selectbox(key="live_thinking").value == "off"
    assert_sampling_defaults(at, "live")

    at.radio(key="live_mode").set_value("Memory test").run()
    assert parse_tokens(at.text_input(key="fit_sizes").value, "x") == page_default(FitSettings, "sizes")
    assert at.number_input(key="fit_fill").value == FitSettings().fill_pct
    assert at.number_input(key="fit_max_tokens").value == FitSettings().max_tokens
    assert_sampling_defaults(at, "fit")
    at.radio(key="live_mode").set_value("Quality").run()
    quality = QualitySettings()
    assert at.number_input(key="lq_in_flight").value == quality.in_flight
    assert (at.number_input(key="lq_in_flight").min, at.number_input(key="lq_in_flight").max) == (1, 64)
    assert at.number_input(key="lq_seed").value == SamplingSettings().seed
    assert_sampling_defaults(at, "lq")
    assert at.text_input(key="lq_max_tokens").value == "1024"
    at.radio(key="live_mode").set_value("Sweep").run()
    assert at.number_input(key="sweep_repeats").value == SweepSettings().repeats
    assert parse_tokens(at.text_input(key="sweep_ctx").value, "x") == (SweepSettings().ctx,)
    assert tuple(at.multiselect(key="sweep_parts").value) == SWEEP_SPEED["parts"]
    assert_sampling_defaults(at, "sweep")
    assert tokens_text((2048, 8192, 1000)) == "2K, 8K, 1000"


def assert_sampling_defaults(at, prefix: str) -> None:
    """Every mode of the Run live page shows every sampling field (live.settings.SamplingSettings), labelled and
    filled as the model says: the page declares no default of its own."""
    from live.settings import label_of

    want = SamplingSettings()
    for name in SamplingSettings.model_fields:
        widget = at.text_input(key=f"{prefix}_{name}") if name == "source" else at.number_input(key=f"{prefix}_{name}")
        assert widget.label == label_of(SamplingSettings, name)
        assert widget.value == (getattr(want, name) if name != "source" else ""), (prefix, name)
