"""Loaders, strict/loose scoring, outputs, compare and the CLI of genlab.ifbench."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from genlab.ifbench import evaluate, load_prompts, load_responses, loose_variants, strip_thinking
from genlab.ifbench.cli import app, main
from genlab.ifbench.data import DataError, PromptItem, parse_ground_truth
from genlab.ifbench.evaluator import compare
from genlab.ifbench.outputs import write_outputs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ifbench_testutil import (
    IFBENCH_FILE,
    IFEVAL_FILE,
    NLTK_DIR,
    nltk_mode,
    use_real_data_if_available,
)

use_real_data_if_available()


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


PROMPTS = [
    {"key": 1, "prompt": "Write without commas.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]},
    {"key": 2, "prompt": "Two rules.", "instruction_id_list": ["count:numbers", "punctuation:no_comma"],
     "kwargs": [{"N": 2.0, "min_words": None}, {"N": None}]},
    {"key": 3, "prompt": "No answer given.", "instruction_id_list": ["startend:quotation"], "kwargs": [{}]},
]
RESPONSES = [
    {"prompt": "Write without commas.", "response": "Fine here"},
    {"prompt": "Two rules. ", "response": "1 and 2, yes"},
]


def test_loaders_and_scores(tmp_path):
    items = load_prompts(_write(tmp_path / "p.jsonl", PROMPTS))
    assert items[1].kwargs == [{"N": 2}, {}]
    resp = load_responses(_write(tmp_path / "r.jsonl", RESPONSES))
    res = evaluate(items, resp)
    assert [p.follow("strict") for p in res.prompts] == [[True], [True, False], [False]]
    assert res.prompts[2].missing
    s = res.summary(bootstrap=200)
    assert s["missing_responses"] == [3]
    assert s["strict"]["prompt_level"] == pytest.approx(1 / 3)
    assert s["strict"]["instruction_level"] == pytest.approx(2 / 4)
    lo, hi = s["strict"]["ci95"]["prompt_level"]
    assert 0 <= lo <= 1 / 3 <= hi <= 1
    assert s["per_category_strict"]["punctuation"] == {"accuracy": 0.5, "n": 2}


def test_loose_variants_and_loose_ge_strict(tmp_path):
    v = loose_variants("Sure!\n*Hello* world\nBye")
    assert v[0] == "Sure!\n*Hello* world\nBye" and v[2] == "*Hello* world\nBye" and v[4] == "*Hello* world"
    assert v[7] == "Hello world" and len(v) == 8
    items = [PromptItem(1, "p", ["startend:quotation", "detectable_format:title"], [{}, {}])]
    res = evaluate(items, {"p": 'Here you go:\n"quoted"'})
    ins = res.prompts[0].instructions
    assert not ins[0].strict and ins[0].loose and ins[0].loose_variant == "drop_first_line"
    assert not ins[1].loose
    for p in res.prompts:
        for i in p.instructions:
            assert i.loose >= i.strict


def test_loose_variants_equal_the_references_split_and_join():
    """Our slicing between the first and last newline gives the reference's variants (split on "\\n", join lines
    1:, :-1 and 1:-1, strip, drop "*") on random text dense in newlines, asterisks and other whitespace."""
    import random

    def reference(response):
        r = response.split("\n")
        first, last, both = "\n".join(r[1:]).strip(), "\n".join(r[:-1]).strip(), "\n".join(r[1:-1]).strip()
        return [response, response.replace("*", ""), first, last, both,
                first.replace("*", ""), last.replace("*", ""), both.replace("*", "")]  # fmt: skip

    rng = random.Random(3)
    for _ in range(20000):
        t = "".join(rng.choice("ab \n*\t\u00a0\r") for _ in range(rng.randint(0, 14)))
        assert loose_variants(t) == reference(t), repr(t)


def test_load_errors_name_file_line_and_key(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(PROMPTS[0]) + "\n{not json\n")
    with pytest.raises(DataError, match=r"bad.jsonl:2: invalid JSON"):
        load_prompts(bad)
    _write(bad, [{**PROMPTS[0], "instruction_id_list": ["nope:id"]}])
    with pytest.raises(DataError, match=r"bad.jsonl:1: field 'instruction_id_list\[0\]': unknown instruction id"):
        load_prompts(bad)
    _write(bad, [{**PROMPTS[1], "kwargs": [{"N": "x"}, {}]}])
    with pytest.raises(DataError, match=r"bad.jsonl:1: field 'kwargs\[0\]'.*integer"):
        load_prompts(bad)
    _write(bad, [{"prompt": "p", "response": 3}])
    with pytest.raises(DataError, match=r"bad.jsonl:1: field 'response'"):
        load_responses(bad)


def test_lenient_skips_unknown_ids(tmp_path):
    rows = [{"key": "a", "prompt": "p", "instruction_id_list": ["new:thing", "punctuation:no_comma"],
             "kwargs": [{"x": 1}, {}]}]
    items = load_prompts(_write(tmp_path / "p.jsonl", rows), lenient=True)
    assert items[0].unknown == [0]
    res = evaluate(items, {"p": "ok"})
    s = res.summary(bootstrap=0)
    assert s["skipped_unknown_ids"] == 1 and s["n_instructions"] == 1 and s["strict"]["prompt_level"] == 1.0


def test_ground_truth_and_multiturn_formats(tmp_path):
    gt = "[{'instruction_id': ['punctuation:no_comma', 'keywords:word_once'], 'kwargs': [None, {'keyword': 'river'}]}]"
    assert parse_ground_truth(gt) == (["punctuation:no_comma", "keywords:word_once"], [None, {"keyword": "river"}])
    assert parse_ground_truth(json.dumps([json.dumps({"instruction_id": ["a"], "kwargs": None})]))[0] == ["a"]
    rows = [
        {"key": 0, "messages": [{"role": "user", "content": "Tell me about rivers."}], "ground_truth": gt},
        {"key": 1, "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
                                {"role": "user", "content": "Rewrite it."}],
         "prompt": "Hi\nRewrite it.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]},
    ]
    items = load_prompts(_write(tmp_path / "p.jsonl", rows))
    assert items[0].prompt == "Tell me about rivers." and items[0].kwargs == [{}, {"keyword": "river"}]
    assert items[1].messages is not None and items[1].prompt == "Hi\nRewrite it."
    res = evaluate(items, {"Tell me about rivers.": "A river runs", "Hi\nRewrite it.": "Hello there"})
    assert [p.follow("strict") for p in res.prompts] == [[True, True], [True]]


def test_strip_thinking():
    assert strip_thinking("<think>plan, plan</think>\n<answer>Final answer</answer>") == "Final answer"
    assert strip_thinking("no thinking here ") == "no thinking here"
    assert strip_thinking("<think>never closed") == ""
    items = [PromptItem(1, "p", ["punctuation:no_comma"], [{}])]
    assert not evaluate(items, {"p": "<think>a, b</think>done"}).prompts[0].instructions[0].strict
    assert evaluate(items, {"p": "<think>a, b</think>done"}, thinking=True).prompts[0].instructions[0].strict


def test_outputs_in_reference_schema(tmp_path):
    items = load_prompts(_write(tmp_path / "p.jsonl", PROMPTS))
    res = evaluate(items, load_responses(_write(tmp_path / "r.jsonl", RESPONSES)))
    paths = write_outputs(res, tmp_path / "out", bootstrap=50)
    rows = [json.loads(x) for x in paths["strict"].read_text().splitlines()]
    assert list(rows[1]) == ["follow_all_instructions", "follow_instruction_list", "instruction_id_list", "prompt",
                             "response"]
    assert rows[1]["follow_instruction_list"] == [True, False] and rows[2]["response"] == ""
    summ = json.loads(paths["summary"].read_text())
    assert summ["n_prompts"] == 3
    html = paths["html"].read_text()
    assert "Worst constraints" in html and "punctuation:no_comma" in html and "1 comma(s)" in html


def test_order_invariance_and_compare(tmp_path):
    items = load_prompts(_write(tmp_path / "p.jsonl", PROMPTS))
    resp = load_responses(_write(tmp_path / "r.jsonl", RESPONSES))
    a = evaluate(items, resp).summary(bootstrap=0)
    b = evaluate(items[::-1], resp).summary(bootstrap=0)
    assert a["strict"] == b["strict"] and a["loose"] == b["loose"]
    better = dict(resp)
    better["Two rules."] = "1 and 2 yes"
    cmp = compare(evaluate(items, resp), evaluate(items, better), n=300)
    assert cmp["strict_prompt_level"]["delta"] == pytest.approx(1 / 3)
    assert cmp["prompt_flips_loose"] == {"a_only": 0, "b_only": 1}


def test_parallel_workers_match_serial(tmp_path):
    items = load_prompts(_write(tmp_path / "p.jsonl", PROMPTS * 3))
    resp = load_responses(_write(tmp_path / "r.jsonl", RESPONSES))
    s1 = evaluate(items, resp, workers=1).summary(bootstrap=0)
    s2 = evaluate(items, resp, workers=2).summary(bootstrap=0)
    assert s1["strict"] == s2["strict"] and s1["per_id_loose"] == s2["per_id_loose"]


runner = CliRunner()


def test_cli_default_eval_list_and_check(tmp_path):
    r = runner.invoke(app, ["eval", "--bootstrap", "0"])
    assert r.exit_code == 0, r.output
    assert "examples:passing" in r.output and "100.00" in r.output
    r = runner.invoke(app, ["list", "--family", "ifbench"])
    assert r.exit_code == 0 and "58 constraints" in r.output
    r = runner.invoke(app, ["check", "--id", "count:numbers", "--kwargs", '{"N": 2}', "--text", "1 and 22 and 3"])
    assert r.exit_code == 1 and r.output.startswith("FAIL: 3 numbers")
    r = runner.invoke(app, ["check", "--id", "punctuation:no_comma", "--text", "fine"])
    assert r.exit_code == 0 and "PASS" in r.output
    r = runner.invoke(app, ["check", "--id", "no:such", "--text", "x"])
    assert r.exit_code == 2


def test_cli_eval_files_and_compare(tmp_path):
    p = _write(tmp_path / "p.jsonl", PROMPTS)
    r1 = _write(tmp_path / "a.jsonl", RESPONSES)
    r2 = _write(tmp_path / "b.jsonl", [RESPONSES[0], {"prompt": "Two rules.", "response": "1 and 2"}])
    out = tmp_path / "out"
    r = runner.invoke(app, ["eval", "--prompts", str(p), "--responses", str(r1), "--out", str(out),
                            "--bootstrap", "0", "--semantics", "fixed"])
    assert r.exit_code == 0, r.output
    assert (out / "eval_results_strict.jsonl").exists() and (out / "eval_results_loose.jsonl").exists()
    assert (out / "summary.json").exists() and (out / "report.html").exists()
    assert "missing responses for keys: [3]" in r.output
    r = runner.invoke(app, ["eval", "--prompts", str(p), "--compare", str(r1), str(r2), "--bootstrap", "0",
                            "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "B - A" in r.output and (out / "compare.json").exists()
    bad = _write(tmp_path / "bad.jsonl", [{"prompt": "x"}])
    assert main(["eval", "--prompts", str(bad), "--responses", str(r1)]) == 2  # genlab's error path: bad input


def test_official_files_load_unchanged():
    ifb = load_prompts(IFBENCH_FILE)
    ife = load_prompts(IFEVAL_FILE)
    assert len(ifb) == 300 and sum(len(i.instruction_id_list) for i in ifb) == 344
    assert len(ife) == 541 and sum(len(i.instruction_id_list) for i in ife) == 834
    assert isinstance(ifb[0].key, str) and isinstance(ife[0].key, int)
    # every integer kwarg arrives as int (floats converted), nulls dropped
    for it in ifb:
        for kw in it.kwargs:
            assert None not in kw.values()
            assert not any(isinstance(v, float) for v in kw.values())


def test_our_tokenizers_equal_nltk_on_official_prompts():
    import nltk

    from genlab.ifbench import nlp

    texts = [i.prompt for i in load_prompts(IFBENCH_FILE)][:120] + [i.prompt for i in load_prompts(IFEVAL_FILE)][:120]
    with nltk_mode("real"):
        nltk.data.path.insert(0, str(NLTK_DIR))
        for t in texts:
            assert nlp.sent_tokenize(t) == nltk.sent_tokenize(t)
            toks = nlp.word_tokenize(t)
            assert toks == nltk.word_tokenize(t)
            assert nlp.first_pos_tag(toks) == nltk.pos_tag(toks)[0][1]
        sw = set(nltk.corpus.stopwords.words("english"))
        assert nlp.stopwords() == sw


def test_word_tokenizer_equals_nltk_treebank():
    """Our rendering of NLTK's improved Treebank tokenizer (its rules recompiled, substitutions skipped where their
    pattern does not occur) gives ``NLTKWordTokenizer().tokenize`` on the official prompts and on random text dense
    in quotes, contractions, brackets, dashes and final punctuation."""
    import random

    from nltk.tokenize.destructive import NLTKWordTokenizer

    from genlab.ifbench import nlp

    rng = random.Random(7)
    texts = [i.prompt for f in (IFBENCH_FILE, IFEVAL_FILE) for i in load_prompts(f)]
    pieces = ["can't", "cannot", "gonna", "wanna", "gimme", "'tis", "'Twas", "I'm", "DON'T", "we'll", "they're",
              "o'clock", "'quoted'", '"said"', "``x''", "“curly”", "‘single’", "«guillemets»", "(paren)", "[b]",
              "{c}", "<d>", "--", "—", "...", "end.", "end.)", 'end."', "3,000", "a:b", "x;y", "@home", "#tag",
              "$5", "50%", "R&D", "why?", "no!", "*star*", "\n", "\t", "  ", "word", "Word", "'", "''",
              "`"]  # fmt: skip
    texts += [" ".join(rng.choice(pieces) for _ in range(rng.randint(0, 25))) for _ in range(4000)]
    soup = [*"aZ .,:;'\"`()[]{}<>-?!*&%$#@“”‘’«»\n", "n't", "'s", "'ll", "can", "not"]
    texts += ["".join(rng.choice(soup) for _ in range(rng.randint(0, 40))) for _ in range(4000)]
    ours, theirs = nlp._word_tokenizer(), NLTKWordTokenizer().tokenize
    for t in texts:
        assert ours(t) == theirs(t), t


@pytest.mark.parametrize("mode", ["real", "offline"])
def test_punkt_in_one_pass_equals_nltk_punkt(mode):
    """Our one-pass rendering of Punkt's tokenize gives NLTK's own sentences: official prompts, synthetic-looking
    responses and their loose variants, and random text dense in periods, abbreviations, quotes and brackets."""
    import random

    from genlab.ifbench import nlp

    rng = random.Random(5)
    texts = [i.prompt for f in (IFBENCH_FILE, IFEVAL_FILE) for i in load_prompts(f)]
    pieces = ["Hello", "world.", "Mr.", "Dr.", "(He", "said.)", '"Yes."', "no!", "Why?", "...", "U.S.", "etc.",
              "--", "'quote.'", "end.)", "A.", "b.", "3.", "x", "\n", "\n\n", "  ", "“Done.”", "«ok.»", "[1].",
              "*bold.*"]  # fmt: skip
    texts += [" ".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(3000)]
    soup = list("aAbB zZ..!!??\"'()[]{}“”‘’«»--\n\t")
    texts += ["".join(rng.choice(soup) for _ in range(rng.randint(0, 60))) for _ in range(3000)]
    texts += [v for t in texts[-200:] for v in loose_variants(t)]
    with nltk_mode(mode):
        tok = nlp._sent_tokenizer()
        punkt, _ = nlp._nltk_modules()
        nltk_tok = punkt.PunktSentenceTokenizer(tok._params)  # NLTK's own classes and decisions, nothing of ours
        for t in texts:
            assert nlp._punkt_sentences(tok, t) == nltk_tok.tokenize(t), t


@pytest.mark.parametrize("mode", ["real", "offline"])
def test_line_drop_variants_reuse_their_parents_split_exactly(mode):
    """A loose variant that drops a first or last line is split by reusing its parent's split (the evaluator
    notes the relation); its sentences equal NLTK's on the variant itself, for official prompts, synthetic
    responses and random multi-line text with odd whitespace, quotes and asterisks, and the reuse does happen."""
    import random

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from bench_ifbench import synth_responses

    from genlab.ifbench import nlp
    from genlab.ifbench.evaluator import _distinct_variants

    rng = random.Random(11)
    rows = [json.loads(x) for f in (IFBENCH_FILE, IFEVAL_FILE) for x in f.read_text().splitlines()]
    texts = [r["prompt"] for r in rows][:300] + [r["response"] for r in synth_responses(rows)][:600]
    pieces = ["Hello", "world.", "Mr.", "(He", "said.)", '"Yes."', "no!", "Why?", "...", "U.S.", "A.", "3.", "x",
              "**bold.**", "*", "'end.'", "“Done.”", "\n", "\n", "\n\n", " \n", "\n ", "\t", "\r\n", "\u00a0",
              "\u2028", "  "]  # fmt: skip
    spaces = ["", " "]
    texts += ["".join(rng.choice(pieces) + rng.choice(spaces) for _ in range(rng.randint(1, 40))) for _ in range(3000)]
    # a break whose next sentence starts right after it ("."+")" with no space) must not be a restart point:
    # ".)mr. Smith" is a break context where ")mr. Smith" is not
    texts += ["Intro\n .)mr. Smith came. Then more.\nEnd", "Intro\nA .)mr. Smith came.\nEnd", "a\nb .)mr. X. y.\nz"]
    reused = tried = 0
    with nltk_mode(mode):
        tok = nlp._sent_tokenizer()
        punkt, _ = nlp._nltk_modules()
        nltk_tok = punkt.PunktSentenceTokenizer(tok._params)
        for t in texts:
            nlp.sent_tokenize(t)
            nlp.sent_tokenize(t.replace("*", ""))
            for _, v in _distinct_variants(t):
                tried += 1
                reused += nlp._spans_from_parent(tok, v) is not None
                assert nlp.sent_tokenize(v) == nltk_tok.tokenize(v), (t, v)
        # cuts that are not clean are not reused: not followed by whitespace, or after non-Punkt whitespace
        parent = "One. Two. Three.\u00a0Four. Five. Six."
        nlp.sent_tokenize(parent)
        for lo, hi in ((0, 14), (17, len(parent)), (26, len(parent))):
            nlp.note_substrings({parent[lo:hi]: parent})
            assert nlp._spans_from_parent(tok, parent[lo:hi]) is None
    assert tried > 3000 and reused > 0.6 * tried, (reused, tried)


@pytest.mark.parametrize("mode", ["real", "offline"])
def test_punkt_break_decisions_equal_nltk(mode):
    """The memoised break decision (with its shortcut for "word. Next") equals NLTK's ``text_contains_sentbreak``
    on every candidate context of the official prompts and on contexts built around abbreviations, collocations,
    initials, numbers, non-ASCII letters and odd whitespace."""
    import itertools

    from genlab.ifbench import nlp

    with nltk_mode(mode):
        tok = nlp._sent_tokenizer()
        decide, nltk_decision = tok.text_contains_sentbreak, type(tok).text_contains_sentbreak.__get__(tok)
        rx = tok._lang_vars.period_context_re()
        texts = [i.prompt for f in (IFBENCH_FILE, IFEVAL_FILE) for i in load_prompts(f)]
        contexts = {t[max(0, m.start() - 12) : m.end("after_tok")] for t in texts for m in rx.finditer(t)}
        words = [*sorted(tok._params.abbrev_types)[:80], *sorted({a for a, _ in tok._params.collocations})[:80],
                 "river", "River", "RIVER", "a", "I", "mr", "Mr", "e.g", "U.S", "3", "1990s", "x-ray", "co-op",
                 "naïve", "Straße", "it's", "(word", "word)", "ab.\u00a0cd", "ab?\u00a0cd", "x\u2003y", ""]  # fmt: skip
        ends = [".", "?", "!", "?!", "!?", ".?", "..."]
        nexts = [" The", " the", "\nNext", "\u00a0Next", "  (x", " 5", ")", "?", " — x", " .", " ?", " !x", " ...",
                 "\t\""]
        contexts |= {w + e + n for w, e, n in itertools.product(words, ends, nexts)}
        assert len(contexts) > 3000
        for c in contexts:
            assert decide(c) == nltk_decision(c), c
        # English Punkt's collocations all start with a number or an initial; with a word-initial one (as other
        # languages' parameters have), "river. bank" is no break and the shortcut must leave it to NLTK
        punkt, _ = nlp._nltk_modules()
        params = punkt.PunktParameters()
        params.abbrev_types, params.collocations = set(tok._params.abbrev_types), {("river", "bank")}
        other = punkt.PunktSentenceTokenizer(params)
        assert nlp._sentbreak_decider(other)("river. bank") is other.text_contains_sentbreak("river. bank") is False


def test_language_detection_is_deterministic():
    from genlab.ifbench import langid

    t = "Ceci est un petit texte en français, avec quelques mots."
    outs = set()
    for _ in range(5):
        langid.clear_cache()
        outs.add(langid.detect(t))
    assert outs == {"fr"}


def test_profiles_from_json_equal_langdetects_table():
    """The first-use source (langdetect's JSON files read directly) answers every n-gram of langdetect's factory
    table with the same languages in the same order and bit-identical probabilities, and nothing else."""
    from genlab.ifbench import langid

    fac = langid._factory()
    langs, fetch = langid._json_source()
    assert langs == list(fac.langlist)
    words = list(fac.word_lang_prob_map)
    got = fetch([*words, "zz-not-a-gram", "☃☃"])
    assert set(got) == set(words)
    assert all(got[w] == fac.word_lang_prob_map[w] for w in words)


def test_indexed_tagger_weights_equal_the_parsed_json(tmp_path):
    """Without the SQLite cache the tagger's weights file is indexed, not parsed: every feature answers exactly
    what json.load gives, unknown features are absent, and a file of another layout is refused (then parsed)."""
    from genlab.ifbench import nlp

    path = NLTK_DIR / "taggers" / "averaged_perceptron_tagger_eng" / "averaged_perceptron_tagger_eng.weights.json"
    parsed = json.loads(path.read_text(encoding="utf-8"))
    indexed = nlp._IndexedJsonWeights(path)
    assert len(indexed.body) == len(parsed)
    assert all(feat in indexed and indexed[feat] == weights for feat, weights in parsed.items())
    assert "no such feature" not in indexed
    odd = tmp_path / "w.json"
    odd.write_text(json.dumps({"a": {"NN": 1.0}, "b": {"VB": 2.0}}, indent=1))
    with pytest.raises(ValueError):
        nlp._IndexedJsonWeights(odd)


def _language_texts(n: int = 400) -> list[str]:
    import random

    rng = random.Random(7)
    sentences = [
        "Ceci est un petit texte en français, avec quelques mots.",
        "This is an English sentence about rivers and mountains.",
        "Der schnelle braune Fuchs springt über den faulen Hund.",
        "これは日本語の文章です。",
        "Hola, ¿cómo estás? Espero que todo vaya bien en tu trabajo.",
        "Olá, tudo bem? Espero que sim, meu amigo.",
        "Это русский текст о погоде.",
        "यह हिंदी में एक वाक्य है।",
        "Tiếng Việt có dấu",
        "안녕하세요 반갑습니다",
        "مرحبا بكم في المدينة",
        "HELLO WORLD THIS IS LOUD",
        "see https://example.com/a?b=1 or mail me@example.org",
        "12345 67890",
        "* bullet\n* another bullet in english text",
    ]
    texts = [" ".join(rng.choice(sentences) for _ in range(rng.randint(1, 5))) for _ in range(n)]
    alphabet = "aAbBzZ  ..,,\n\t1ÀéßİıŞș ț日本語カタカナひらがな한국어ثبتپی Ấ ẠxX--"
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 50))) for _ in range(n // 2)]
    return sentences + texts + ["", "   ", "!!!"]


def test_fast_langdetect_equals_langdetect(monkeypatch):
    """Every answer, one text at a time and in a batch, is seeded langdetect's own (texts in 14 scripts and
    languages, mixtures, URLs, undecidable ones, random character soup)."""
    from genlab.ifbench import langid

    texts = _language_texts()
    reference = [langid._detect_reference(t) for t in texts]
    langid.clear_cache()
    langid.detect_many(texts)
    assert [langid._MEMO[t] for t in texts] == reference
    langid.clear_cache()
    monkeypatch.setattr(langid, "_WINDOW", 8)  # every trial runs past the first window of the stream
    langid.detect_many(texts[:60])
    assert [langid._MEMO[t] for t in texts[:60]] == reference[:60]
    for t, ref in list(zip(texts, reference))[:40]:
        langid.clear_cache()
        if ref is None:
            with pytest.raises(langid.DetectionError):
                langid.detect(t)
        else:
            assert langid.detect(t) == ref, t


def test_random_stream_matches_python_random():
    import random

    from genlab.ifbench import langid

    stream = langid._stream()
    assert stream is not None
    rnd = random.Random(langid.SEED)
    words = [rnd.getrandbits(32) for _ in range(5000)]
    assert stream.take(0, 5000).tolist() == words
    assert stream.take(70_000, 3).tolist() == [random.Random(langid.SEED).getrandbits(32 * 70_003) >> (32 * k)
                                               & 0xFFFFFFFF for k in (70_000, 70_001, 70_002)]


def test_ngram_rows_equal_langdetect_extraction():
    import random

    rng = random.Random(0)
    alphabet = "aAbBzZ  ..,,\n\t1ÀéßİıŞș ț日本語カタカナひらがな한국어ثبتپی Ấ ẠxX--"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(500)]
    ascii_soup = "aAbBzZ  ..,,\n\t1@:/_[]^`~xX--http"
    texts += ["".join(rng.choice(ascii_soup) for _ in range(rng.randint(0, 60))) for _ in range(300)]
    texts += ["ABC DEF gHI jKL MNo pQ R", "Hello World. THIS is IT!", "", "see https://x.org/a?b=1 or me@ex.com  now"]
    _assert_ngrams_are_langdetects(texts)


def test_ngram_rows_equal_langdetect_extraction_at_the_shortcuts():
    """The preparation's shortcuts give langdetect's n-grams: Vietnamese combining marks (normalize_vi runs only
    when one is present), texts near langdetect's "non-Latin majority" rule (2 x [A-z] vs characters from
    U+0300, with Latin-1 and Latin Extended letters that count as neither), runs of spaces, and capitals."""
    import random

    rng = random.Random(3)
    pieces = ["a", "B", "z", "e\u0301", "o\u0323", "A\u0300", "\u0303", "\u0309", "é", "ß", "Ş", "ț", "ǅ", "ɐ",
              "日", "ж", "ب", "한", "ก", "  ", " ", "\n", ".", "1", "[", "`", "ÀB", "CDe"]  # fmt: skip
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))) for _ in range(600)]
    texts += ["Tie\u0302\u0301ng Vie\u0323\u0302t co\u0301 da\u0302\u0301u", "ab" + "ж" * 4, "ab" + "ж" * 5]
    texts += ["ab" + "é" * 9, "ab  " + "ж" * 5]
    _assert_ngrams_are_langdetects(texts)


def _assert_ngrams_are_langdetects(texts):
    """Every n-gram langdetect visits in each text, in order, kept when a profile has it (its _extract_ngrams
    filter), is what langid's preparation and n-gram rows give."""
    import types

    from langdetect.detector import Detector

    from genlab.ifbench import langid

    profiles = langid._profiles()
    for t in texts:
        d = Detector(types.SimpleNamespace(word_lang_prob_map=_Everything(), langlist=[], seed=0))
        d.append(t)
        d.cleaning_text()
        grams = d._extract_ngrams()
        profiles.add(grams)
        # the n-grams without a profile entry pack to nothing (dropped, as in langdetect's filter)
        assert langid._ngram_bytes(langid._prepare(t)) == b"".join(profiles.packed[g] for g in grams), t


class _Everything:
    """A map that claims to hold every n-gram, so langdetect lists every n-gram it visits."""

    def __contains__(self, item: object) -> bool:
        return True
