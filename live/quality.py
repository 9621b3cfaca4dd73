"""Quality measured live: generated tests and the user's item files against a running server.

``run_quality(cfg)`` builds every item's prompt (long-context ones to an exact depth, counted by the
server's tokenizer), asks the server with ``cfg.in_flight`` requests at once through the stamp-then-parse
client (``live.client``), scores each answer (``live.scoring``) with its thinking kept apart, and returns a
``QualityContract`` exactly like an uploaded one: one record per item with its id, prompt SHA-256, the
answer (its end, bounded), what was extracted, right or wrong, finish reason, tokens and time. An answer
cut off by the limit is wrong and counted apart; a request that fails is asked once more (both records
kept, the last one counts). Stop (``stop`` set, Ctrl-C) cuts the requests in flight; what finished is kept.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, cast

from live import generators as gen
from live.client import STOPPED, StreamResult, body_pieces, parse_stream, sse_events, stream_chat
from live.items import ItemFile, UserItem, readable_test_id
from live.measure import (
    MeasureConfig,
    Runner,
    ServerInfo,
    ServerLocked,
    contract_sampling,
    probe,
    reason_text,
    server_lock,
    slug,
)
from live.scoring import score, split_thinking
from live.settings import (
    LIVE_SAMPLING,
    QUALITY_MAX_TOKENS,
    QUALITY_MAX_TOKENS_MAX,
    QualitySettings,
    SamplingSettings,
    TargetSettings,
    parse_max_tokens,
)
from live.setups import place_setup
from schemas import ids
from schemas.models import (
    ANSWER_MAX,
    SCHEMA_VERSION,
    Attachment,
    QualityContract,
    QualityItem,
    QualityTest,
    Setup,
)

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "QualityConfig",
    "QualityEvent",
    "Question",
    "ServerLocked",
    "build_questions",
    "parse_max_tokens",
    "quality_config",
    "run_quality",
    "write_quality_folder",
]

DEFAULT_MAX_TOKENS = QUALITY_MAX_TOKENS
_DEFAULTS = QualitySettings()
_SAMPLING = SamplingSettings()
TestStatus = Literal["ok", "failed", "repeated", "skipped", "stopped"]
TOOL = "benchcards live quality 0.1.0"


@dataclass
class QualityConfig:
    """What to ask and how."""

    # the defaults are live.settings' (TargetSettings, QualitySettings), which also give the command line
    base_url: str = TargetSettings().base_url
    model: str | None = None
    tests: tuple[gen.TestSpec, ...] = ()
    item_files: tuple[ItemFile, ...] = ()
    thinking: bool | None = _DEFAULTS.thinking
    max_tokens: dict[str, int] = field(default_factory=dict)  # test id or kind -> answer limit
    default_max_tokens: int = DEFAULT_MAX_TOKENS
    in_flight: int = _DEFAULTS.in_flight
    seed: int = _SAMPLING.seed  # of the generated items and of sampling (SamplingSettings.seed)
    read_timeout: float = _DEFAULTS.read_timeout
    allow_remote: bool = False
    # what every request sends besides the seed: measure's and fit's (live.settings.SamplingSettings)
    sampling: dict = field(default_factory=lambda: dict(LIVE_SAMPLING))
    sampling_source: str | None = None

    def measure_config(self, **more: object) -> MeasureConfig:
        """The request settings of this run (and of its setup.json, ``live.measure.build_setup``)."""
        return MeasureConfig(base_url=self.base_url, thinking=self.thinking, allow_remote=self.allow_remote,
                             sampling={**self.sampling, "seed": self.seed}, sampling_source=self.sampling_source,
                             **more)

    def limit_for(self, test_id: str, kind: str) -> int:
        """The answer limit of a test: by its id, an item file's also by its readable id (items-mmlu for
        items-mmlu-<hash>), then by its kind, else the default."""
        for key in (test_id, readable_test_id(test_id), kind):
            if key in self.max_tokens:
                return self.max_tokens[key]
        return self.default_max_tokens

    def _test_keys(self) -> list[str]:
        """What --max-tokens TEST=N may name in this run."""
        keys = [k for s in self.tests for k in (s.test_id, s.kind)] + [k for f in self.item_files for k in
                                                                        (f.test, readable_test_id(f.test))]
        return list(dict.fromkeys(keys + (["items"] if self.item_files else [])))

    def __post_init__(self) -> None:
        if not self.tests and not self.item_files:
            raise ValueError("--tests or --items: nothing to ask")
        if not 1 <= self.in_flight <= 64:
            raise ValueError(f"--in-flight: {self.in_flight} is not a whole number from 1 to 64")
        bad = [f"{k}={v}" for k, v in self.max_tokens.items() if not 1 <= v <= QUALITY_MAX_TOKENS_MAX]
        if bad or not 1 <= self.default_max_tokens <= QUALITY_MAX_TOKENS_MAX:
            raise ValueError(f"--max-tokens: {', '.join(bad) or self.default_max_tokens} — a limit from 1 to "
                             f"{QUALITY_MAX_TOKENS_MAX:,} tokens")
        keys = self._test_keys()
        unknown = [k for k in self.max_tokens if k not in keys]
        if unknown:
            raise ValueError(f"--max-tokens {', '.join(f'{k}={self.max_tokens[k]}' for k in unknown)}: no such test "
                             f"in this run (its tests: {', '.join(keys)})")
        ids = [s.test_id for s in self.tests] + [f.test for f in self.item_files]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"test {', '.join(dup)} asked twice (the same item file given twice?)")


def quality_config(settings: QualitySettings, target: TargetSettings,
                   sampling: SamplingSettings | None = None) -> tuple[QualityConfig | None, list[str]]:
    """The run's configuration from the settings as typed (tests parsed, item files read; ``sampling``: the
    sampling options, default measure's), or None and every problem, one line each (naming the option)."""
    sampling = sampling or SamplingSettings()
    from live.generators import SpecError, parse_tests
    from live.items import ItemFileError, read_item_file

    problems: list[str] = []
    specs: list = []
    files: list = []
    try:
        specs = parse_tests(settings.tests)
    except SpecError as exc:
        problems.append(str(exc))
    for name in settings.items:
        try:
            files.append(read_item_file(Path(name)))
        except ItemFileError as exc:
            problems.extend(exc.errors)
        except OSError as exc:
            problems.append(f"--items {name}: {exc.strerror or exc}")
    try:
        default, per = parse_max_tokens(list(settings.max_tokens))
        if problems:
            return None, problems
        return QualityConfig(base_url=target.base_url, model=target.model, tests=tuple(specs), item_files=tuple(files),
                             thinking=settings.thinking, max_tokens=per, default_max_tokens=DEFAULT_MAX_TOKENS if default is None else default,
                             in_flight=settings.in_flight, seed=sampling.seed, read_timeout=settings.read_timeout,
                             allow_remote=target.allow_remote, sampling=sampling.sent(),
                             sampling_source=sampling.source), []
    except ValueError as exc:
        return None, [*problems, str(exc)]


@dataclass
class Question:
    """One item ready to send: its prompt and how to score the answer."""

    test: str
    id: str
    task: str | None
    prompt: str
    scorer: str
    expected: str
    max_tokens: int
    n_choices: int = 0
    tolerance: float = 0.0
    aliases: tuple[str, ...] = ()
    pattern: object = None
    depth: int | None = None
    expected_tokens: int | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.prompt.encode()).hexdigest()


@dataclass
class QualityEvent:
    """Progress: one item answered (or the prompts of a test built)."""

    kind: str  # "built" | "item"
    test: str
    item: str | None
    done: int
    total: int
    right: bool | None = None
    cut_off: bool = False
    error: str | None = None
    seconds: float | None = None
    elapsed_s: float = 0.0

    @property
    def left_s(self) -> float | None:
        """Time left at the pace so far (items answered / elapsed); None before the first answer."""
        if self.kind != "item" or not self.done:
            return None
        return self.elapsed_s / self.done * (self.total - self.done)


def build_questions(cfg: QualityConfig, count: Callable[[str], int | None] | None, overhead: int,
                    log: Callable[[str], None] = lambda s: None) -> dict[str, list[Question]]:
    """Every test's questions, in order (generated ones sized with ``count``, the server's tokenizer on raw
    text, plus ``overhead`` template tokens). Side effects: calls ``count``."""
    out: dict[str, list[Question]] = {}
    for spec in cfg.tests:
        qs = []
        limit = cfg.limit_for(spec.test_id, spec.kind)
        for item in gen.items_for(spec, cfg.seed):
            text, expected = item.question, None
            if spec.depth:
                if count is None:
                    raise RuntimeError("the server counts no tokens (no tokenize endpoint, no usage): "
                                       "long-context prompts cannot be sized")
                fitted = gen.fit_depth(item, spec.depth, count, overhead)
                text, expected = fitted.text, fitted.expected
                log(f"{item.id}: {fitted.expected} tokens for depth {spec.depth} ({fitted.units} units, "
                    f"{fitted.pad} pad, {fitted.checks} counts)")
            qs.append(Question(spec.test_id, item.id, item.task, text, item.scorer, item.expected, limit,
                               depth=spec.depth, expected_tokens=expected))
        out[spec.test_id] = qs
    for f in cfg.item_files:
        limit = cfg.limit_for(f.test, "items")
        out[f.test] = [_user_question(f.test, it, limit) for it in f.items]
    return out


def _user_question(test: str, it: UserItem, limit: int) -> Question:
    return Question(test, it.id, it.task, it.text(), it.scorer, it.answer, limit, n_choices=len(it.choices),
                    tolerance=it.tolerance, aliases=it.aliases, pattern=it.pattern)


def reasoning_text(res_raw: object) -> str:
    """The server's separate thinking (``delta.reasoning_content``) of a streamed answer."""
    head, pieces, _ = body_pieces(res_raw)  # type: ignore[arg-type]
    if head is None or head.status != 200:
        return ""
    out: list[str] = []
    for ev in sse_events(pieces):
        try:
            obj = json.loads(ev.data)
        except ValueError:
            continue
        choices = obj.get("choices") if isinstance(obj, dict) else None
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            delta = choices[0].get("delta")
            piece = delta.get("reasoning_content") if isinstance(delta, dict) else None
            if isinstance(piece, str):
                out.append(piece)
    return "".join(out)


class QualityRunner:
    """One quality run against one server (reuses ``live.measure.Runner`` for requests and counting)."""

    def __init__(self, cfg: QualityConfig, on_event: Callable[[QualityEvent], None] | None = None,
                 stop: threading.Event | None = None):
        self.cfg = cfg
        self.mcfg = cfg.measure_config(model=cfg.model, read_timeout=cfg.read_timeout, ignore_eos=False)
        self.runner = Runner(self.mcfg, None, stop)
        self.on_event = on_event or (lambda e: None)
        self.stop = self.runner.stop
        self.items: dict[str, list[QualityItem]] = {}
        self.status: dict[str, tuple[str, str | None]] = {}

    @property
    def info(self) -> ServerInfo | None:
        return self.runner.info

    def say(self, line: str) -> None:
        self.runner.say(line)

    def overhead(self) -> int:
        """Tokens the chat template adds (server count of a request minus the tokenizer's count)."""
        probe_text = "Count these words, please."
        served = self.runner.server_prompt_tokens(probe_text)
        raw = self.runner.count_tokens(probe_text)
        if served is None or raw is None:
            return 0
        self.say(f"chat template adds {served - raw} tokens")
        return served - raw

    def ask(self, q: Question) -> tuple[StreamResult, str]:
        """Send one question; (parsed result, the server's separate thinking)."""
        r = self.runner
        payload = r.payload(q.prompt, q.max_tokens, force_length=False)
        raw = stream_chat(f"{r.base}/v1/chat/completions", payload, connect_timeout=self.mcfg.connect_timeout,
                          read_timeout=self.mcfg.read_timeout, limits=r.limits(q.prompt, q.max_tokens),
                          cancel=r.cancel)
        res = parse_stream(raw, q.max_tokens, per_token=False)  # a score, no rate divides by the count
        return res, reasoning_text(raw) if res.status == 200 else ""

    def record(self, q: Question, res: StreamResult, reasoning: str) -> QualityItem:
        thinking, answer = split_thinking(res.text, reasoning)
        cut = res.error is None and res.finish_reason == "length"
        verdict = score(q.scorer, answer, q.expected, n_choices=q.n_choices, tolerance=q.tolerance,
                        pattern=q.pattern, aliases=q.aliases)
        seconds = res.t_end - res.t_send if res.t_end is not None else None
        return QualityItem(
            id=q.id, right=verdict.right and not cut and res.error is None, cut_off=cut,
            tokens=res.output_tokens, seconds=max(0.0, seconds) if seconds is not None else None, task=q.task,
            error=res.error[:2000] if res.error else None, prompt_sha256=q.sha256, prompt_tokens=res.prompt_tokens,
            answer=answer[-ANSWER_MAX:] if answer else None, answer_chars=len(answer), thinking_chars=len(thinking),
            extracted=verdict.extracted[:200] if verdict.extracted else None, expected=q.expected[:10_000],
            finish_reason=res.finish_reason)

    def one(self, q: Question) -> list[QualityItem]:
        """Ask ``q``; a request that fails (not stopped) is asked once more. Every record is kept."""
        out: list[QualityItem] = []
        for _attempt in range(2):
            res, reasoning = self.ask(q)
            out.append(self.record(q, res, reasoning))
            if res.error is None or self.stop.is_set() or res.error == STOPPED:
                break
            self.say(f"{q.id}: {res.error}; asking again")
        return out

    def run(self) -> dict[str, list[Question]]:
        """Probe, build, ask; fills ``self.items`` and ``self.status``. Never raises for server faults."""
        r = self.runner
        r.info = probe(r.client, r.base)
        self.say(f"server: {r.info}")
        if not r.info.reachable:
            for f in [s.test_id for s in self.cfg.tests] + [f.test for f in self.cfg.item_files]:
                self.status[f] = ("failed", r.info.error or "server not reachable")
            return {}
        count: Callable[[str], int | None] | None = r.count_tokens if r.info.has_tokenize else \
            r.server_prompt_tokens
        overhead = self.overhead() if r.info.has_tokenize else 0
        questions: dict[str, list[Question]] = {}
        try:
            questions = build_questions(self.cfg, count, overhead, self.say)
        except RuntimeError as exc:
            for t in [s.test_id for s in self.cfg.tests]:
                self.status[t] = ("failed", str(exc))
            questions = {f.test: [_user_question(f.test, it, self.cfg.limit_for(f.test, "items")) for it in f.items]
                         for f in self.cfg.item_files}
        for test, qs in questions.items():
            self._too_long(test, qs)
        self._ask_all(questions)
        return questions

    def _too_long(self, test: str, qs: list[Question]) -> None:
        info = self.info
        if not info or not info.n_ctx or not qs or not qs[0].depth:
            return
        need = qs[0].depth + qs[0].max_tokens
        if need > info.n_ctx:
            self.status[test] = ("skipped", f"{qs[0].depth:,} prompt tokens + {qs[0].max_tokens:,} answer tokens "
                                            f"= {need:,}, more than the server's context per slot of "
                                            f"{info.n_ctx:,} tokens")
            qs.clear()

    def _ask_all(self, questions: dict[str, list[Question]]) -> None:
        todo = [q for qs in questions.values() for q in qs]
        total = len(todo)
        t0 = time.perf_counter()
        done = 0
        it: Iterator[Question] = iter(todo)
        with ThreadPoolExecutor(self.cfg.in_flight, thread_name_prefix="benchcards-quality") as pool:
            running: dict[Future, Question] = {}

            def fill() -> None:
                while len(running) < self.cfg.in_flight and not self.stop.is_set():
                    q = next(it, None)
                    if q is None:
                        return
                    running[pool.submit(self.one, q)] = q

            fill()
            while running:
                finished, _ = wait(list(running), timeout=0.5, return_when=FIRST_COMPLETED)
                for fut in finished:
                    q = running.pop(fut)
                    try:
                        recs = fut.result()
                    except Exception as exc:  # a bug must not lose the items that finished
                        recs = [QualityItem(id=q.id, right=False, task=q.task, prompt_sha256=q.sha256,
                                            error=f"{exc.__class__.__name__}: {exc}"[:2000])]
                    if recs[-1].error == STOPPED:
                        continue  # cut by Stop: not an answer
                    self.items.setdefault(q.test, []).extend(recs)
                    done += 1
                    last = recs[-1]
                    self.on_event(QualityEvent("item", q.test, q.id, done, total, last.right, last.cut_off,
                                               last.error, last.seconds, time.perf_counter() - t0))
                fill()
        for test, qs in questions.items():
            if test in self.status:
                continue
            got = len({i.id for i in self.items.get(test, [])})
            if self.stop.is_set() and got < len(qs):
                self.status[test] = ("stopped", f"stopped by the user: {got} of {len(qs)} items answered")
            elif got and all(i.error for i in self.items[test]):
                self.status[test] = ("failed", f"every request failed: {self.items[test][-1].error}")
            else:
                self.status[test] = ("ok", None)

    def contract(self, started: datetime, questions: dict[str, list[Question]]) -> QualityContract:
        cfg = self.cfg
        tests = []
        specs = {s.test_id: s for s in cfg.tests}
        files = {f.test: f for f in cfg.item_files}
        sampling = contract_sampling(self.mcfg)
        for test in [s.test_id for s in cfg.tests] + [f.test for f in cfg.item_files]:
            status, reason = self.status.get(test, ("ok", None))
            order = {q.id: i for i, q in enumerate(questions.get(test, []))}
            items = sorted(self.items.get(test, []), key=lambda it: order.get(it.id, len(order)))  # stable
            spec, f = specs.get(test), files.get(test)
            if status == "ok" and not items:
                status, reason = "skipped", "no item was answered"
            scorers = {q.scorer for q in questions.get(test, [])}
            tests.append(QualityTest(
                test=test, label=spec.label if spec else ids.one_line(f"{f.name} (item file {f.sha256[:8]})") if f else test,
                description=gen.DESCRIPTIONS.get(spec.kind) if spec else "the user's own items",
                status=cast(TestStatus, status),
                reason=reason_text(reason) if reason else None,
                token_limit=cfg.limit_for(test, spec.kind if spec else "items"), thinking=cfg.thinking,
                sampling=sampling, seed=cfg.seed, in_flight=cfg.in_flight, items=items,
                generator=f"benchcards {spec.kind}" if spec else "item file",
                generator_version=gen.GENERATOR_VERSION if spec else None, depth=spec.depth if spec else None,
                scorer=(next(iter(scorers)) if len(scorers) == 1 else "per item") if scorers else None,
                items_sha256=f.sha256 if f else None, items_planned=len(questions.get(test, [])) or None))
        info = self.info
        run_id = f"live-q-{started.strftime('%Y%m%d-%H%M%S')}-{self.runner.run_tag}"
        return QualityContract(
            schema_version=SCHEMA_VERSION, kind="quality", run_id=run_id, setup_id="pending",
            started_at=started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            finished_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), tool=TOOL,
            engine_version=info.build if info else None, tests=tests)


def run_quality(cfg: QualityConfig, on_event: Callable[[QualityEvent], None] | None = None,
                stop: threading.Event | None = None) -> tuple[QualityContract, ServerInfo, list[str]]:
    """Run the quality tests; (contract, what the server said, the client log).

    Raises ServerLocked when another run of this machine is measuring the same server (nothing is sent),
    NotLoopback for a target off this machine without ``allow_remote``.
    """
    qr = QualityRunner(cfg, on_event, stop)
    qr.runner.watch_stop()
    started = datetime.now(UTC)
    try:
        with server_lock(cfg.base_url):
            questions = qr.run()
    finally:
        qr.runner.cancel.cancel("the run ended")
        qr.runner.client.close()
    assert qr.info is not None
    return qr.contract(started, questions), qr.info, qr.runner.log


def demo_items_note(cfg: QualityConfig, info: ServerInfo) -> str | None:
    """What a run of item files against the benchcards demo server must say (the CLI and the Run live page):
    the demo knows an item file's answers only when it was started with it; None otherwise."""
    if not (info.demo and cfg.item_files):
        return None
    names = ", ".join(f.name for f in cfg.item_files)
    return (f"the target is the benchcards demo server: it answers the items of {names} (right at its "
            "--quality-right share) only when it was started with `--items FILE`; without it, it guesses "
            "multiple-choice letters and runs other items to the token limit (cut off)")


def write_quality_folder(out: Path, setup: Setup, contract: QualityContract, log: list[str]) -> Path:
    """Write (or add to) the raw setup folder ``out/<setup_id>``; returns the contract folder.

    The run joins ``out/<setup_id>`` only when its setup.json describes the same setup; otherwise it goes to
    a separate setup folder (``live.setups.place_setup``, the rule of every live kind; call it first to learn
    where and why). Side effects: writes setup.json (the same setup, with the new date added) and
    quality/<run_id>/{contract.json, client.log}; the log is listed as an attachment with its hash.
    """
    setup, _ = place_setup(out, setup)  # never into a stored setup that describes another one
    folder = out / setup.setup_id
    run_dir = folder / "quality" / slug(contract.run_id)
    data = ("\n".join(log) + "\n").encode()
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "client.log").write_bytes(data)
    final = contract.model_copy(update={
        "setup_id": setup.setup_id,
        "attachments": [Attachment(path="client.log", sha256=hashlib.sha256(data).hexdigest(), bytes=len(data),
                                   description="client log of the run")]})
    final = QualityContract.model_validate(final.model_dump())
    (folder / "setup.json").write_text(setup.model_dump_json(indent=1, exclude_none=True) + "\n", encoding="utf-8")
    (run_dir / "contract.json").write_text(final.model_dump_json(indent=1, exclude_none=True) + "\n",
                                           encoding="utf-8")
    return run_dir
