"""Scoring answers (live/scoring.py) on a table of real answer styles, the generated tests (live/generators.py):
reproducible, answerable from their prompts, sized to their depth; and item files (live/items.py): every
scorer, and clear errors naming file, line and field."""

from __future__ import annotations

import json

import pytest

from ingest.limits import Limits
from live import generators as gen
from live.demo_server import TEMPLATE_TOKENS, pieces
from live.items import ItemFileError, parse_item_file
from live.scoring import extract_letter, extract_number, normalise, score, split_thinking

pytestmark = pytest.mark.unit

# answers as models write them (styles seen from Llama 3, Qwen 3, Mistral and GPT-style chat models)
LETTER_STYLES = [
    ("Answer: C", "C"),
    ("**C**", "C"),
    ("(C)", "C"),
    ("C", "C"),
    ("The answer is C.", "C"),
    ("The answer is (C).", "C"),
    ("**Answer:** C", "C"),
    ("Answer: **(C)**", "C"),
    ("Final answer: C\n", "C"),
    ("Looking at each option:\nA is wrong since ...\nB fails because ...\n\nC", "C"),
    ("Let me reason.\n- (A) too small\n- (B) too large\n\nTherefore the answer is D", "D"),
    ("<think>\nMaybe A? Answer: A. No, wait.\n</think>\n\nAnswer: C", "C"),
    ("<think>Options A, B... I pick B</think>\n**C**", "C"),
    ("Between (A) and (C), the right one is **C**.", "C"),
    ("I choose (B) first, but on reflection the answer is C", "C"),
    ("C) 42", None),  # a choice's text repeated, no statement of the answer: not extracted by rule 2
    ("C is the best option because it is the largest.", None),
    ("The answer is a tricky one.\nB", "B"),  # "answer is a" is not the letter A
    ("Answer: None of these", None),
    ("<think>I will say Answer: B", None),  # thinking never closed: no answer
    ("", None),
]


@pytest.mark.parametrize("text, letter", LETTER_STYLES)
def test_letter_extraction_on_real_answer_styles(text, letter):
    _, answer = split_thinking(text)
    assert extract_letter(answer, 4) == letter


def test_letters_beyond_the_choices_are_not_choices():
    assert extract_letter("Answer: E", 4) is None and extract_letter("Answer: E", 10) == "E"


def test_thinking_from_the_server_field_is_apart_and_never_scored():
    thinking, answer = split_thinking("Answer: C", reasoning="so Answer: A")
    assert thinking == "so Answer: A" and answer == "Answer: C"
    thinking, answer = split_thinking("the template opened it... Answer: A</think>\nAnswer: B")
    assert answer == "Answer: B" and "Answer: A" in thinking
    assert score("choice", answer, "B", n_choices=4).right


@pytest.mark.parametrize("text, value", [
    ("Answer: 36", 36), ("So 12 * 3 = 36.\nAnswer: 36", 36), ("Answer: -1,714", -1714), ("Answer: −5", -5),
    ("The total is $1,234.50.", 1234.5), ("Answer: 2.5e3 apples", 2500), ("No number here", None),
    ("Step 1: 4 + 4 = 8. Step 2: 8 * 2 = 16", 16),
])
def test_number_extraction(text, value):
    assert extract_number(text) == value


def test_number_tolerance_and_exact_normalising():
    assert score("number", "Answer: 3.14", "3.14159", tolerance=0.01).right
    assert not score("number", "Answer: 3.1", "3.14159", tolerance=0.01).right
    assert score("number", "Answer: 391", "391").right and not score("number", "Answer: 392", "391").right
    assert normalise("  “**Paris.**” ") == "paris"
    assert score("exact", "I believe it is:\n**Paris**.", "paris").right
    assert score("exact", "Answer: Paris, France", "Paris", aliases=("Paris, France",)).right
    assert not score("exact", "Answer: Lyon", "Paris").right
    assert score("set", "Answer: stone, mirror and valley", "mirror stone valley").right
    assert not score("set", "Answer: stone mirror", "mirror stone valley").right


# --------------------------------------------------------------------------- generated tests


def demo_count(text: str) -> int:
    return len(pieces(text))


def test_same_seed_same_items_ids_and_prompts_byte_for_byte():
    specs = gen.parse_tests("needle:8K:4,vartrack:8K:2,words:8K:2,arith:20,dates:20,logic:20")
    first = [(it.id, it.expected, it.question) for s in specs for it in gen.items_for(s, 11)]
    again = [(it.id, it.expected, it.question) for s in specs for it in gen.items_for(s, 11)]
    other = [(it.id, it.expected, it.question) for s in specs for it in gen.items_for(s, 12)]
    assert first == again and first != other
    assert first[0][0] == "needle_8k-11-0000"
    long_a = [gen.fit_depth(it, 8192, demo_count, TEMPLATE_TOKENS).text for it in gen.items_for(specs[0], 11)]
    long_b = [gen.fit_depth(it, 8192, demo_count, TEMPLATE_TOKENS).text for it in gen.items_for(specs[0], 11)]
    assert [a.encode() for a in long_a] == [b.encode() for b in long_b]


def test_every_generated_item_is_answerable_from_its_prompt_alone():
    for spec in gen.parse_tests("needle:2K:8,vartrack:2K:4,words:2K:4,arith:50,dates:50,logic:50"):
        for it in gen.items_for(spec, 3):
            text = gen.fit_depth(it, spec.depth, demo_count, TEMPLATE_TOKENS).text if spec.depth else it.question
            assert gen.solve(text) is not None and score(it.scorer, f"Answer: {gen.solve(text)}", it.expected).right, \
                (it.id, gen.solve(text), it.expected)


@pytest.mark.parametrize("depth", [2048, 8192, 32768, 131072])
def test_long_prompts_have_their_depth_on_a_bpe_like_tokenizer(depth):
    for spec in gen.parse_tests(f"needle:{depth}:2,vartrack:{depth}:1,words:{depth}:1"):
        for it in gen.items_for(spec, 5):
            f = gen.fit_depth(it, depth, demo_count, TEMPLATE_TOKENS)
            assert abs(demo_count(f.text) + TEMPLATE_TOKENS - depth) <= depth * 0.01, (it.id, f.expected)
            if it.padded:  # with pad words the count is exact (a word list too: its pad words come first)
                assert demo_count(f.text) + TEMPLATE_TOKENS == depth


def test_needles_sit_where_they_were_placed():
    spec = gen.parse_tests("needle:8K:2")[0]
    it = gen.items_for(spec, 1)[0]
    text = gen.fit_depth(it, 8192, demo_count, TEMPLATE_TOKENS).text
    at = text.index(f"is {it.expected}.") / len(text)
    assert abs(100 * at - it.needle_depth_pct) < 3


@pytest.mark.parametrize("text, message", [
    ("needle", "give a depth"), ("needle:lots", "not a token count"), ("needle:512", "depth must be between"),
    ("arith:0", "not an item count"), ("mmlu:10", "unknown test 'mmlu'"), ("arith:5,arith:6", "arith asked twice"),
])
def test_bad_test_specs_name_the_entry(text, message):
    with pytest.raises(gen.SpecError, match=message):
        gen.parse_tests(text)


def test_spec_ids_and_labels():
    s = gen.parse_tests("needle:32K,arith:200,words:8192:3")
    assert [(x.test_id, x.n, x.depth) for x in s] == [("needle_32k", 10, 32768), ("arith", 200, None),
                                                      ("words_8k", 3, 8192)]
    assert s[0].label == "Needle retrieval 32K (generated)"


# --------------------------------------------------------------------------- item files


def jsonl(*objs) -> bytes:
    return b"\n".join(o if isinstance(o, bytes) else json.dumps(o).encode() for o in objs) + b"\n"


def test_an_item_file_with_every_scorer():
    f = parse_item_file(jsonl(
        {"id": "q1", "prompt": "Which gas?", "scorer": "choice", "choices": ["N2", "O2", "CO2", "Ar"], "answer": "c"},
        {"id": "q2", "prompt": "Capital of France?", "scorer": "exact", "answer": "Paris", "task": "geo"},
        {"id": "q3", "prompt": "17 * 23?", "scorer": "number", "answer": 391},
        {"id": "q4", "prompt": "A prime above 10?", "scorer": "regex", "answer": r"\b(11|13|17|19)\b"}), "My Set.jsonl")
    assert f.test == "items-my-set-" + f.sha256[:8] and len(f.sha256) == 64 and [i.id for i in f.items] == ["q1", "q2", "q3", "q4"]
    q1 = f.items[0]
    assert "A. N2\nB. O2\nC. CO2\nD. Ar" in q1.text() and q1.answer == "c"
    assert score("choice", "Answer: C", q1.answer, n_choices=4).right
    assert score("regex", "Answer: 13", "", pattern=f.items[3].pattern).right


@pytest.mark.parametrize("line, message", [
    (b'{"id": "a", "prompt": "p", "scorer": "exact"}', "sets.jsonl line 2, field 'answer': missing"),
    (b'{"id": "a", "prompt": "p", "scorer": "guess", "answer": "x"}', "line 2, field 'scorer': one of choice"),
    (b'{"id": "a", "prompt": "p", "scorer": "exact", "answer": "x", "extra": 1}', "field 'extra': unknown field"),
    (b'{"id": "a\\nb", "prompt": "p", "scorer": "exact", "answer": "x"}', "field 'id': one line of text"),
    (b'{"id": "a", "prompt": "p\\u0007", "scorer": "exact", "answer": "x"}', "field 'prompt': control characters"),
    (b'{"id": "a", "prompt": "p", "scorer": "number", "answer": "12"}', "field 'answer': a number"),
    (b'{"id": "a", "prompt": "p", "scorer": "choice", "choices": ["x", "y"], "answer": "C"}',
     "field 'answer': the letter of the right choice, A to B"),
    (b'{"id": "a", "prompt": "p", "scorer": "regex", "answer": "(unclosed"}', "not a valid regular expression"),
    (b'{"id": "a", "prompt": "p", "scorer": "regex", "answer": "' + b"a" * 501 + b'"}', "at most 500 characters"),
    (b'{"id": "a", "prompt": [[["deep"]]], "scorer": "exact", "answer": "x"}', "line 2: "),
    (b'{"id": "a", "prompt": "p", "scorer": "exact", "answer": "x", "answer": "y"}', "appears twice"),
    (b'[1, 2]', "each line must be one JSON object"),
    (b'{"id": "first", "prompt": "p", "scorer": "exact", "answer": "x"}', "'first' already used on line 1"),
    (b'{not json', "line 2: is not valid JSON"),
])
def test_malformed_item_files_name_file_line_and_field(line, message):
    first = b'{"id": "first", "prompt": "p", "scorer": "exact", "answer": "x"}'
    with pytest.raises(ItemFileError) as exc:
        parse_item_file(first + b"\n" + line + b"\n", "sets.jsonl")
    assert any(message in e for e in exc.value.errors), exc.value.errors


def test_item_file_bounds():
    small = Limits(items_file_bytes=1000, items_per_file=3, item_line_bytes=200)
    ok = b'{"id": "%d", "prompt": "p", "scorer": "exact", "answer": "x"}'
    with pytest.raises(ItemFileError, match="larger than"):
        parse_item_file(b" " * 1001, "big.jsonl", small)
    with pytest.raises(ItemFileError, match="more than 3 items"):
        parse_item_file(b"\n".join(ok % i for i in range(5)), "many.jsonl", small)
    with pytest.raises(ItemFileError, match="line 1: longer than"):
        parse_item_file(b'{"id": "a", "prompt": "' + b"p" * 300 + b'"}', "long.jsonl", small)
    with pytest.raises(ItemFileError, match="byte-order mark"):
        parse_item_file(b"\xef\xbb\xbf" + ok % 1, "bom.jsonl")
    with pytest.raises(ItemFileError, match="no items"):
        parse_item_file(b"\n\n", "empty.jsonl")
    with pytest.raises(ItemFileError) as exc:
        parse_item_file(b"\n".join(b"{bad" for _ in range(100)), "bad.jsonl")
    assert len(exc.value.errors) == 21 and exc.value.errors[-1] == "bad.jsonl: 80 more problem(s) not listed"


def test_a_file_name_with_control_characters_is_shown_safely():
    with pytest.raises(ItemFileError) as exc:
        parse_item_file(b"{bad", "evil\x1b[31m.jsonl")
    assert "\x1b" not in exc.value.errors[0] and "evil?[31m.jsonl line 1" in exc.value.errors[0]


def test_the_servers_separate_thinking_is_read_from_the_stream_and_kept_apart():
    """llama-server (default reasoning format) streams thinking as delta.reasoning_content: it is read
    apart from the content, and an 'Answer:' in it is never scored."""
    from live.client import RawStream, parse_stream
    from live.quality import reasoning_text

    def event(delta: dict, finish=None) -> bytes:
        return b"data: " + json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).encode() \
            + b"\n\n"

    body = (event({"role": "assistant", "content": None}) + event({"reasoning_content": "Maybe Answer: A"})
            + event({"reasoning_content": ". No."}) + event({"content": "Answer: "}) + event({"content": "C"})
            + event({}, "stop") + b"data: [DONE]\n\n")
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body)
    raw = RawStream.from_reads(0.0, [(0.1, head + body)])
    res = parse_stream(raw, 16)
    thinking, answer = split_thinking(res.text, reasoning_text(raw))
    assert res.error is None and thinking == "Maybe Answer: A. No." and answer == "Answer: C"
    assert score("choice", answer, "C", n_choices=4).right


# --------------------------------------------------------------------------- from the hostile review


def test_a_pattern_that_backtracks_without_end_is_stopped_and_counted_wrong(monkeypatch):
    """`(a|aa)+$` on 35 a's and a b backtracks for minutes: the scorer stops it and says why."""
    import regex

    from live import scoring

    monkeypatch.setattr(scoring, "REGEX_TIMEOUT_S", 0.1)
    got = scoring.score("regex", "a" * 35 + "b", "x", pattern=regex.compile(r"(a|aa)+$"))
    assert got.right is False
    assert got.extracted is not None and "did not finish" in got.extracted


def test_an_item_file_name_with_direction_marks_is_a_safe_label():
    from live.items import parse_item_file

    f = parse_item_file(b'{"id": "r1", "prompt": "say 4", "scorer": "exact", "answer": "4"}\n', "<b>x\u202e\u0085.jsonl")
    assert "\u202e" not in f.name and "\u0085" not in f.name and f.name.startswith("<b>x")


@pytest.mark.parametrize("pattern, message", [
    ("a{1000000000}", "repeat count 1,000,000,000 is over the limit of 1,000"),
    ("(a{1000}){1000}", "expand the pattern to about 1,000,000 characters, over the limit of 20,000"),
    ("((a{100}){100}){3}", "expand the pattern to about 30,000 characters"),
    ("a{5,1000000}", "repeat count 1,000,000 is over the limit"),
    ("a{1000000,}", "repeat count 1,000,000 is over the limit"),
    (r"\\{1000000}", "repeat count 1,000,000"),  # an escaped backslash, then a count
    ("(?x)a{ 1 000 000 }", "the inline flags (?x) and (?V1) are not accepted"),
])
def test_a_regex_that_would_expand_without_bound_is_refused_before_it_is_compiled(pattern, message, monkeypatch):
    import regex

    from live import items

    compiled: list[str] = []
    monkeypatch.setattr(items.regex, "compile", lambda p, *a, **k: compiled.append(p) or regex.compile(p))
    line = json.dumps({"id": "s", "prompt": "p", "scorer": "regex", "answer": pattern}).encode()
    with pytest.raises(ItemFileError) as exc:
        parse_item_file(b'{"id": "ok", "prompt": "p", "scorer": "exact", "answer": "x"}\n' + line, "sets.jsonl")
    assert len(exc.value.errors) == 1
    assert exc.value.errors[0].startswith("sets.jsonl line 2, field 'answer': ") and message in exc.value.errors[0]
    assert pattern not in compiled  # refused before the compile that would allocate


@pytest.mark.parametrize("pattern, hit, miss", [
    (r"[{]{5}", "{{{{{", "{{{{"),  # a brace in a class, then a small count
    (r"\{1000000000}", "{1000000000}", "{1}"),  # an escaped brace: literal text
    (r"a{1000}", "a" * 1000, "a" * 999),
    (r"(ab){2,3}x{,2}", "ababx", "abx"),
    (r"\p{L}{3}", "abc", "ab"),
])
def test_small_counts_braces_in_classes_and_escaped_braces_are_accepted(pattern, hit, miss):
    f = parse_item_file(jsonl({"id": "s", "prompt": "p", "scorer": "regex", "answer": pattern}), "ok.jsonl")
    assert f.items[0].pattern.fullmatch(hit) and not f.items[0].pattern.fullmatch(miss)


def test_item_files_of_one_name_with_other_items_are_other_tests():
    a = parse_item_file(jsonl({"id": "q", "prompt": "p", "scorer": "exact", "answer": "x"}), "d1/x.jsonl")
    b = parse_item_file(jsonl({"id": "q", "prompt": "p", "scorer": "exact", "answer": "y"}), "d2/x.jsonl")
    again = parse_item_file(jsonl({"id": "q", "prompt": "p", "scorer": "exact", "answer": "x"}), "d3/x.jsonl")
    spaced = parse_item_file(jsonl({"id": "q", "prompt": "p", "scorer": "exact", "answer": "z"}), "x y.jsonl")
    dashed = parse_item_file(jsonl({"id": "q", "prompt": "p", "scorer": "exact", "answer": "w"}), "x-y.jsonl")
    assert a.test == "items-x-" + a.sha256[:8] and a.name == "x.jsonl" and b.name == "x.jsonl"
    assert a.test != b.test and a.test == again.test and spaced.test != dashed.test
    from live.items import readable_test_id

    assert readable_test_id(a.test) == readable_test_id(b.test) == "items-x" and readable_test_id("arith") == "arith"


@pytest.mark.parametrize("extra, message", [
    ({"aliases": ["x" * 3_000_000]}, "field 'aliases': a list of at most 50 non-empty strings of at most 1,000 "
                                     "characters (entry 1 is 3,000,000 characters long)"),
    ({"aliases": ["ok"] * 51}, "field 'aliases': a list of at most 50 non-empty strings of at most 1,000 characters "
                               "(51 entries)"),
    ({"aliases": ["ok", 5]}, "(entry 2 is int, not a string)"),
    ({"aliases": "Paris"}, "(got str, not a list)"),
    ({"aliases": ["ok", "  "]}, "(entry 2 is empty)"),
])
def test_a_bad_alias_list_says_what_is_wrong_with_it(extra, message):
    with pytest.raises(ItemFileError) as exc:
        parse_item_file(jsonl({"id": "a", "prompt": "p", "scorer": "exact", "answer": "x", **extra}), "al.jsonl")
    assert len(exc.value.errors) == 1 and exc.value.errors[0].startswith("al.jsonl line 1, field 'aliases': ")
    assert message in exc.value.errors[0]
