"""Verdict parity and speed of genlab.ifbench against the official allenai/IFBench checkers.

    NLTK_DATA=tests/resources/nltk_data python benchmarks/bench_ifbench_official.py --official DIR [--reps 3] [--out F]
    NLTK_DATA=tests/resources/nltk_data python benchmarks/bench_ifbench_official.py --official DIR --timing --reps 7

How the official folder was made (2026-12-03): the stored snapshot of allenai/IFBench (HEAD db69a6f, brought onto
the machine with the search tool's ``fetch github:allenai/IFBench``) was exported with ``git archive HEAD
evaluation_lib.py run_eval.py instructions_test.py ifbench | tar -x -C /tmp/ifb-official``; NLTK 3.9.2 and
``immutabledict`` (which the official code imports) were installed with ``pip install --target /tmp/nltk392
--no-deps nltk==3.9.2 immutabledict`` and put first on ``PYTHONPATH`` (for NLTK 3.10.4, only ``immutabledict``).
Nothing of it is committed here.

``--timing`` only times: warm strict+loose CPU time of the official ``evaluation_lib`` loop and of genlab on the
IFBench-300 and IFEval-541 files with the synthetic responses, official and genlab alternating, and prints the
median and range of the ratio of each back-to-back pair (the HEAD registry also holds the 25 IFEval ids, so the
same official evaluator scores both files).

``DIR`` holds a local, unmodified copy of the official evaluator, importable as top-level modules:
``evaluation_lib.py`` (which imports ``instructions_registry``), ``instructions_registry.py`` (mapping the 58 ids to
the classes of ``instructions.py``) and ``instructions.py`` + ``instructions_util.py`` (flat, as at the repository
root) or ``ifbench/instructions.py`` + ``ifbench/instructions_util.py`` (the package layout of some commits; the
registry then imports ``from ifbench import instructions``). The official code is not on PyPI and must never be
committed here; see docs/ifbench.md (Parity) for the commits measured and how the folder was assembled.

The harness changes nothing in those files. It only (1) makes ``nltk.download`` a no-op before importing them (the
data are local and there is no network; the reference calls it at import and in every ``count_stopwords``),
(2) seeds langdetect (``DetectorFactory.seed = 0``) in case the registry pulls in IFEval checkers, and (3) wraps
each registered class's ``check_following`` so that an input on which the reference *raises* (which would abort
its whole run) is recorded and counted as not followed, which is how genlab scores it.

Run it with the NLTK the reference locks (IFBench's uv.lock: nltk 3.9.2, e.g. ``pip install --target DIR2
nltk==3.9.2`` and ``PYTHONPATH=DIR2``): NLTK >= 3.10 tokenises ``\\w+`` with the ``regex`` engine, which keeps
combining marks inside words ("nai\u0308ve", Devanagari), so ``count:word_count_range`` / ``ratio:stop_words``
then differ from genlab (which, like NLTK 3.9, uses ``re``) on such texts.

Response sets for the 300 IFBench test prompts (344 instructions):

* ``synthetic``: ``bench_ifbench.synth_responses`` (deterministic prose / markdown / lists / copies of the prompt);
* ``hard``: ``--rounds`` response sets written here, each response aimed at one of its prompt's instructions with
  the prompt's own kwargs: texts just inside / outside each constraint's boundary (counts N-1/N/N+1, percentages at
  the ±2 window, nesting depth 4/5/6, ...), the tokenisation traps of each checker (punctuation tokens, "don't",
  unicode digits, multi-codepoint emoji, curly quotes, ``<em>`` tags, ...) and the embedded examples
  (``genlab.ifbench.examples.EXAMPLES``) where their kwargs fit; some rounds add a preamble / closing line or
  ``**`` so that strict and loose differ. ``--rounds 0`` (default) uses every candidate text at least once;
* ``tests``: the official ``instructions_test.py``, if ``DIR`` has one, run with every ``check_following`` call also
  checked by genlab (the authors' own boundary texts and kwargs).

For the first two sets it reports

* per-variant agreement: every instruction x each of the 8 loose variants, official ``check_following`` on a fresh
  instance (nulls dropped, as ``evaluation_lib``) vs ``genlab`` ``check(..., semantics=...)``, an empty/whitespace
  text failing on both sides; disagreements per id, with a few examples;
* instruction-level agreement: ``evaluation_lib.test_instruction_following_strict`` then ``_loose`` (run as
  ``run_eval.py`` runs them, on ``read_prompt_list`` / ``read_prompt_to_response_dict`` of the same files) vs
  ``genlab.ifbench.evaluate``; strict, loose and both;
* warm time of strict+loose over the 300 prompts, best of ``--reps`` after one warm-up run: the official
  ``evaluation_lib`` loop vs ``genlab.ifbench.evaluate(..., workers=1)`` with genlab's caches cleared before each
  repetition. The machine's load average is printed with it.

One JSON summary is printed at the end (``--out FILE`` also writes it).

Last results (2026-12-04, 2-core machine, load average 0.9-1.0, Python 3.11.7, nltk 3.9.2, emoji 2.15.0, syllapy
0.8.0; official ``ifbench/instructions.py`` at db69a6f, genlab ``semantics="reference"``): synthetic 2,752 of 2,752
variant checks and 344 of 344 instructions (strict and loose) agree; hard (46 rounds, both official outcomes seen for
all 58 ids) 126,592 of 126,592 and 15,824 of 15,824; official tests 174 of 174 calls. With ``--prompts`` on the
IFEval file every difference is ``keywords:letter_frequency`` for a non-letter ``letter`` (the official code draws a
random letter then: 4 and 78 variant checks in that run, a different count each run). ``--timing --reps 15``, three
invocations: IFBench 21.2x, 21.2x, 21.1x (official 0.53-0.56 s, genlab 0.025-0.027 s CPU), IFEval 20.0x, 20.0x,
20.5x (0.78-0.87 s, 0.039-0.043 s). Against the stored root ``instructions.py`` at 1d62c1d (which adds PR #34's six
fixes) the differences are exactly those six ids.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ifbench import FILES, synth_responses

# ----------------------------------------------------------------------------------------- official code


def load_official(folder: Path):
    """Import evaluation_lib and instructions_registry from ``folder``; returns (module, registry, raised)."""
    import nltk

    nltk.download = lambda *a, **k: True  # local data, no network
    try:
        import langdetect

        langdetect.DetectorFactory.seed = 0
    except ImportError:  # pragma: no cover - only needed if the registry includes IFEval checkers
        pass
    sys.path.insert(0, str(folder))
    import evaluation_lib

    try:  # flat layout of the older commits
        import instructions_registry
    except ImportError:  # HEAD (db69a6f): the ifbench package, whose registry also holds the 25 IFEval ids
        from ifbench import instructions_registry

    raised: collections.Counter = collections.Counter()
    wrapped = set()
    for cls in instructions_registry.INSTRUCTION_DICT.values():
        if cls in wrapped:
            continue
        wrapped.add(cls)
        orig = cls.check_following

        def check_following(self, value, _orig=orig):
            try:
                return _orig(self, value)
            except Exception as e:  # the reference would abort its run here; genlab counts it as not followed
                raised[f"{self.id}: {type(e).__name__}"] += 1
                return False

        cls.check_following = check_following
    return evaluation_lib, instructions_registry.INSTRUCTION_DICT, raised


def official_variants(response: str) -> list[str]:
    """The eight loose variants, built as evaluation_lib.test_instruction_following_loose builds them."""
    lines = response.split("\n")
    rm_first = "\n".join(lines[1:]).strip()
    rm_last = "\n".join(lines[:-1]).strip()
    rm_both = "\n".join(lines[1:-1]).strip()
    return [response, response.replace("*", ""), rm_first, rm_last, rm_both,
            rm_first.replace("*", ""), rm_last.replace("*", ""), rm_both.replace("*", "")]


def official_run(evaluation_lib, prompt_file: Path, resp_file: Path):
    """strict then loose exactly as run_eval.py (fresh inputs: strict drops null kwargs in place for loose)."""
    inputs = evaluation_lib.read_prompt_list(str(prompt_file))
    p2r = evaluation_lib.read_prompt_to_response_dict(str(resp_file))
    t, c = time.perf_counter(), time.process_time()
    strict = [evaluation_lib.test_instruction_following_strict(inp, p2r) for inp in inputs]
    loose = [evaluation_lib.test_instruction_following_loose(inp, p2r) for inp in inputs]
    return strict, loose, time.perf_counter() - t, time.process_time() - c


def genlab_run(prompt_file: Path, responses: dict[str, str], semantics: str):
    from genlab.ifbench import evaluate, langid, load_prompts, nlp

    items = load_prompts(prompt_file)
    nlp.clear_caches()
    langid.clear_cache()
    t, c = time.perf_counter(), time.process_time()
    res = evaluate(items, responses, semantics=semantics, workers=1)
    return res, time.perf_counter() - t, time.process_time() - c


# ----------------------------------------------------------------------------------------- hard response set

_WORDS = ("river stone light garden window morning yellow quiet forest bridge music paper silver ocean valley "
          "market shadow winter candle harbor meadow lantern castle orchard thunder velvet").split()
_SYL = ["ba", "ko", "ri", "mu", "te", "sa", "lo", "ne", "pi", "du", "ga", "vo", "zi", "fe", "hu"]
_STOP = ["the", "of", "and", "to", "in", "is", "it", "that", "was", "for"]
_CONTENT = ["river", "garden", "silver", "castle", "meadow", "harbor", "lantern", "orchard"]
_NAMES = ("Emma Liam Sophia Jackson Olivia Noah Ava Lucas Isabella Mason Mia Ethan Charlotte Alexander Amelia "
          "Benjamin Harper Leo Zoe Daniel Chloe Samuel Lily Matthew Grace Owen Abigail Gabriel Ella Jacob Scarlett "
          "Nathan Victoria Elijah Layla Nicholas Audrey David Hannah Christopher Penelope Thomas Nora Andrew Aria "
          "Joseph Claire Ryan Stella Jonathan").split()
_CONJ = ["and", "but", "for", "nor", "or", "so", "yet"]
_PRONOUN_TEXT = ["I", "me", "we", "you", "he", "she", "it", "they", "this", "that", "who", "someone", "all", "none"]


def _distinct(n: int) -> list[str]:
    out = []
    for a in _SYL:
        for b in _SYL:
            for c in ("", "n", "l"):
                out.append(a + b + c)
    return out[:n]


def _words(n: int, rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(max(n, 0)))


def _sentence(n: int, rng: random.Random, first: str | None = None) -> str:
    ws = [rng.choice(_WORDS) for _ in range(max(n, 1))]
    if first:
        ws[0] = first
    return " ".join(ws).capitalize() + "."


def _char_trigrams(s: str) -> set:
    return {s[i:i + 3] for i in range(len(s) - 2)}


def _overlap_texts(ref: str, pct: float) -> list[str]:
    """Texts whose character-trigram overlap with ``ref`` sits around pct-2 and pct+2 (and word-level analogues)."""
    out = [ref, ref.upper(), ref[: max(3, len(ref) // 2)]]
    rt = _char_trigrams(ref)
    novel = "".join(chr(0x4E00 + i) for i in range(4000))
    best: dict[float, tuple[float, str]] = {}
    targets = (pct - 2.5, pct - 2, pct - 1.9, pct, pct + 1.9, pct + 2, pct + 2.5)
    for a in range(3, len(ref) + 1, max(1, len(ref) // 25)):
        part = ref[:a]
        shared = len(_char_trigrams(part) & rt)
        if not shared:
            continue
        for t in targets:
            if t <= 0 or t > 100:
                continue
            k0 = int(shared * (100 - t) / t)
            for k in range(max(0, k0 - 2), k0 + 3):
                text = part + novel[:k]
                tg = _char_trigrams(text)
                if not tg:
                    continue
                o = 100 * len(tg & rt) / len(tg)
                d = abs(o - t)
                if t not in best or d < best[t][0]:
                    best[t] = (d, text)
    out += [v[1] for v in best.values()]
    ws = ref.split()
    if len(ws) > 6:
        keep = max(3, round(len(ws) * pct / 100))
        out.append(" ".join(ws[:keep] + ["zyx"] * max(0, len(ws) - keep)))
    return out


def _hard_texts(cid: str, kw: dict, prompt: str, rng: random.Random) -> list[str]:
    """Near-boundary candidate responses for one instruction with the prompt's own kwargs."""
    n = int(kw["N"]) if "N" in kw else None
    sn = int(kw["small_n"]) if "small_n" in kw else None
    if cid == "count:word_count_range":
        lo, hi = int(kw["min_words"]), int(kw["max_words"])
        return [_words(lo - 1, rng), _words(lo, rng), _words(hi, rng), _words(hi + 1, rng),
                _words(lo - 2, rng) + " don't", _words(hi - 1, rng) + " well-known", _words(hi, rng) + " 3.14",
                _words(lo, rng) + " \u2014", _words(lo - 1, rng) + " _", _words(lo - 1, rng) + " nai\u0308ve",
                _words(hi - 1, rng) + " \u0928\u092e\u0938\u094d\u0924\u0947"]
    if cid == "count:unique_word_count":
        d = _distinct(n + 1)
        return [" ".join(d[: n - 1]), " ".join(d[:n]), " ".join(d[: n + 1]),
                " ".join(d[: n - 1]) + " " + d[0].capitalize() + ",", " ".join(d[: n - 1]) + " --",
                " ".join(d[: n - 1]) + " \u2014", ", ".join(d[: n - 1]) + " 'quoted'"]
    if cid == "ratio:stop_words":
        p = int(kw["percentage"])
        out = []
        for k in (p - 1, p, p + 1):
            k = max(0, min(100, k))
            ws = [_STOP[i % len(_STOP)] for i in range(k)] + [_CONTENT[i % len(_CONTENT)] for i in range(100 - k)]
            rng.shuffle(ws)
            out.append(" ".join(ws))
        ws = ["don't"] * (p // 2) + [_CONTENT[i % len(_CONTENT)] for i in range(100 - p // 2 * 2)]
        out += [" ".join(ws), "THE OF AND " + _words(7, rng), "...", "the of and nai\u0308ve cafe\u0301 x y z"]
        return out
    if cid == "ratio:sentence_type":
        return ["The sun rose. The birds sang. Did you hear them?", "It rained. Why? It poured.",
                "One. Two. Three? Four. Five. Six?", 'He said "yes." She left. Why?', "No end marks here",
                "Dr. Smith arrived. He sat down. Are you well?", "First.\nSecond.\nThird?", "Wait... Really? Yes."]
    if cid == "ratio:sentence_balance":
        return ["I came. Did you? Wow!", "I came. Did you? Wow! Then left.", "Really?! Yes. No!",
                "no end marks", "A. B. C? D? E! F!", "He asked: why? I said no. Great!", "Okay.\nWhy?\nStop!"]
    if cid == "count:conjunctions":
        c = _CONJ[:sn]
        return [" ".join(f"{w} {rng.choice(_WORDS)}" for w in c),
                " ".join(f"{w} {rng.choice(_WORDS)}" for w in c[:-1]),
                " ".join(f"{w} {rng.choice(_WORDS)}" for w in c[:-1]) + f" {c[0]}, again",
                " ".join(f"{w.capitalize()} {rng.choice(_WORDS)}" for w in c[:-1]) + f" {c[0]} more",
                " ".join(f"({w}) x" for w in c), "Either this nor that; yet so."]
    if cid == "count:person_names":
        return [", ".join(_NAMES[:n]), ", ".join(_NAMES[: n - 1]), ", ".join(_NAMES[: n - 1]) + ", Miami",
                ", ".join(_NAMES[: n - 1]) + ", emma", " and ".join(x + "'s" for x in _NAMES[:n]),
                " ".join(_NAMES[: n - 1]) + " Leonardo", "-".join(_NAMES[:n])]
    if cid == "ratio:overlap":
        return _overlap_texts(kw["reference_text"], float(kw["percentage"]))
    if cid == "count:numbers":
        base = [str(i * 7) for i in range(1, n + 2)]
        return [" ".join(base[:n]), " ".join(base[: n - 1]), " ".join(base[: n + 1]),
                " ".join(base[: n - 1]) + " 3.14", " ".join(base[: n - 1]) + " 1,000,000",
                " ".join(base[: n - 2]) + " 2nd -5", " ".join(base[: n - 1]) + " \u0661\u0662",
                " ".join(base[: n - 1]) + " \u00bd", "item" + "-".join(base[:n])]
    if cid == "words:alphabet":
        return ["Apple banana cherry dates", "Yak zebra apple bear", "A big cat. Dogs eat food.",
                "apple's banana cherry", "Apple \u2014 banana", "Apple banana 3 cherry", "x-ray yak zoo", "Zoo. Apple!"]
    if cid == "words:vowel":
        return ["With I this is in.", "the eel eek eked out.", "The cat sat.\nOn the mat.", "Abc def ghi.",
                "AAA EEE III", "Sky gym myth.", "the dog ate a bun", "Quit it, Sam."]
    if cid == "words:consonants":
        return ["Strong brand trust.", "This does not.", "Strength, 42.", "STRONG BRANDS", "crypt myth lynx",
                "Black-and-white", "Christmas \u2014 starts", "bright sparks"]
    if cid == "sentence:alliteration_increment":
        return ["No alliteration. Some semblance of alliteration. Alliterating across alphabet is interesting.",
                "Big bears. Silly snakes slide. Tiny tigers take toys today.", "Cats. Cats cry. Dogs dig deep dens.",
                "Red roses rise. Blue bells. Green grass grows gently.", "One sentence only here."]
    if cid == "words:palindrome":
        pals = ["level", "radar", "civic", "refer", "madam", "rotor", "kayak", "tenet", "stats", "sagas", "racecar"]
        return [" ".join(pals[:10]), " ".join(pals[:9]), ", ".join(p.capitalize() for p in pals[:10]),
                " ".join(["level"] * 10), " ".join(pals[:9]) + " noon", " ".join(pals[:9]) + " a-b-a-b-a",
                " ".join(pals[:9]) + " Racecar!"]
    if cid == "count:punctuation":
        return ["Hi, there. Yes! Why? Wait; go: now?!", "Hi, there. Yes! Why? Wait; go: now", "Hi, there; go: ok?!",
                "Hi, there. Yes! Why? Wait; go: now\u203d", "a, b. c; d: e!?", "Hi. Yes!? no", ".,;:?!?!"]
    if cid == "format:parentheses":
        return ["(a [b {c (d [e])}])", "(a [b {c (d)}])", "((((((x))))))", "(a [b {c (d [e)}])", "([{([x])}]",
                "(((((x)))) ((((y)))))", "{[(<x>)]} (((((y)))))", "(a [b {c (d [e] f) g} h] i)"]
    if cid == "format:quotes":
        return ["\"She said 'he told me \"no\" twice' before leaving,\" John explained.",
                "\"She said 'hello' to me.\"", "'a \"b 'c' b\" a'", "\"It's 'fine' \"really\"\"",
                "\u201cShe said \u2018he told me \u201cno\u201d\u2019\u201d", "\"a 'b \"c\"'\"", "no quotes"]
    if cid == "words:prime_lengths":
        return ["be cat apple", "be cat apples", "I am ok", "to go far away", "xx yyy zzzzz, aa.", "it's ok",
                "seven letter words", "we're to go"]
    if cid == "format:options":
        opts = kw["options"]
        cands = ["yes", "Yes.", "no!", "maybe", "Maybe so", "a)", "a", "(a)", "b)", "I know", "I don't know.",
                 "I know.", "i DON'T KNOW", "yes/no", opts]
        return cands
    if cid == "format:newline":
        return ["one\ntwo\nthree", "one\n\ntwo\nthree", "one two\nthree", "\u2014\nword", "hello,\nworld.",
                "one\n-\ntwo", "single", "a\n b\n c"]
    if cid == "format:emoji":
        return ["I love it \U0001f600. Great \U0001f389!", "Nice. \U0001f600 Next \U0001f389.",
                "Flag \U0001f1eb\U0001f1f7.", "Heart \u2764\ufe0f.",
                "Family \U0001f468\u200d\U0001f469\u200d\U0001f467.",
                "Thumbs \U0001f44d\U0001f3fd.", "No emoji here.", "Copy \u00a9.", "Digit 1\ufe0f\u20e3. Star \u2b50!",
                "Two \U0001f600\U0001f600. End"]
    if cid == "ratio:sentence_words":
        return ["Cats run. Dogs sit. Owls fly.", "Cats run. Dogs sit. Birds fly.", "Cats run. Cats run. Cats run.",
                "Ab cd. Ef gh. Ij kl. Mn op.", "I am. We go. Do it.", "Cat ran! Dog sat? Owl ate.", "One. Two. Six."]
    if cid == "count:words_japanese":
        def seq(bad: str | None = None) -> str:
            ws = []
            for i in range(1, 3 * n + 1):
                ws.append((bad or "\u65e5\u672c") if i % n == 0 else rng.choice(_WORDS))
            return " ".join(ws)
        return [seq(), seq("river"), seq("123"), seq("\u2014"), seq("\uff76\uff80"), seq("\u30fc"), seq("(\u65e5)"),
                seq("\u3042,")]
    if cid == "words:start_verb":
        return ["Run to the store.", "run to the store.", "Go now.", "Write a poem.", "Is it true?", "Be calm.",
                "Running is fun.", "Please help.", "Let us go.", "The dog runs.", "I think so.", "Consider this.",
                "Imagine a world.", "\"Go,\" he said.", "1. Do it.", "Explain briefly.", "Make it so."]
    if cid == "words:repeats":
        w = "river"
        return [" ".join([w] * sn), " ".join([w] * (sn + 1)), " ".join([w.capitalize() + ","] * sn + [w]),
                " ".join([w] * sn + ["river's"]), _words(3 * sn, rng), " ".join(["a"] * (sn + 1))]
    if cid == "sentence:keyword":
        w, k = kw["word"], int(kw["N"])
        def sents(pos: int, word: str) -> str:
            return " ".join(_sentence(4, rng, word if i == pos else None) for i in range(1, max(k, pos) + 1))
        return [sents(k, w), sents(k - 1, w), sents(k, w.capitalize()), sents(k, w + "s"), sents(k, w + "-like"),
                " ".join(_sentence(4, rng) for _ in range(k - 1)), sents(k, f"({w})")]
    if cid == "count:pronouns":
        base = [_PRONOUN_TEXT[i % len(_PRONOUN_TEXT)] for i in range(n)]
        return [" ".join(base), " ".join(base[:-1]), " ".join(base[:-1]) + " I'm", " ".join(base[:-2]) + " she/her",
                " ".join(base[:-1]) + " the US", " ".join(base[:-1]) + " it's", " ".join(base[:-1]) + " whose"]
    if cid == "words:odd_even_syllables":
        return ["The elephant ran to me", "cat banana dog", "I am a person", "beautiful day", "one two three four",
                "strawberry is red", "Hello world", "x-ray machine"]
    if cid == "words:last_first":
        return ["I love cats. Cats love fish. Fish swim fast.", "I love cats. Dogs bark.", "End. End. End.",
                "I love cats! \"Cats are great.\" Great job.", "One sentence only", "Go home. Home? Yes."]
    if cid == "words:paragraph_last_first":
        return ["home is where the heart is home\nlove is all you need love", "home sweet home.\nlove is blind",
                "Home is home.\n\nLove, love!", "single", "word\n  \nword word", "A b a\nC"]
    if cid == "sentence:increment":
        def inc(first: int, step: int, k: int = 3) -> str:
            return " ".join(_sentence(first + i * step, rng) for i in range(k))
        return [inc(2, sn), inc(2, sn + 1), inc(3, sn, 4), inc(2, 0), _sentence(5, rng),
                inc(2, sn) + " \u2014 yes.", "It is 3.5 now. " + _sentence(1 + sn, rng)]
    if cid == "words:no_consecutive":
        return ["apple banana cat", "big bad wolf", "one two\ntoo", "a - apple", "Tiny, tall trees", "x y z",
                "dog's day", "Eat, drink, and be merry"]
    if cid == "format:line_indent":
        return ["a\n b\n  c", "a\n\n b\n  c", "a\n\n\n b\n  c", "a\n\n\n\n b\n  c", "a\n\tb\n\t\tc", "a\n b\n b",
                "  a\n b", "a\n b  \n  c", "\n a\n  b"]
    if cid == "format:quote_unquote":
        return ["\"Hello\" means hi.", "\"Hello\" \"world\"", "He said \"hi\"", "He said \"hi\".",
                "\u201cHi\u201d he said", "He said \u201chi\u201d", "The char '\"' is a quote.", "\"a\" 1.",
                "No quotes"]
    if cid == "format:list":
        s = kw["sep"]
        return [f"{s} apples\n{s} pears", f"{s} apples", f"apples {s} pears {s} plums", f"{s}apples\n{s}pears",
                "well-known and up-to-date", f"Items:\n{s} a\n{s} b\n{s} c", f"\n{s}"]
    if cid == "format:thesis":
        return ["<i>A thesis.</i> Support.", "<i>A thesis.</i>", "<em>Thesis</em>", "<em>Thesis</em> text",
                "<i> </i> text", "text <i>T</i> more", "<i>T</em> x", "no tags"]
    if cid == "format:sub-bullets":
        return ["* a\n  - a1\n* b\n  - b1", "* a\n* b\n  - b1", "**Heading**\n* a\n  - a1", "no bullets at all",
                "* well-known item", "* a - b", "- a\n- b"]
    if cid == "format:no_bullets_bullets":
        return ["I like fruit. It is healthy.\n* apples\n* pears", "I like fruit.\n* apples\n* pears",
                "I like fruit. It is healthy.\n\n* apples\n* pears", "One. Two.\n* a\n* b\nThree.",
                "One.\nTwo.\n* a\n* b", "One. Two.\n* a", "One.\n\nTwo.\n* a\n* b", "* a\n* b"]
    if cid == "count:keywords_multiple":
        ks = [kw[f"keyword{i}"] for i in range(1, 6)]
        counts = [1, 2, 3, 5, 7]
        def make(cs: list[int], tweak: str = "") -> str:
            parts = []
            for k_, c_ in zip(ks, cs):
                parts += [k_] * c_
            rng.shuffle(parts)
            return " ".join(parts) + tweak
        return [make(counts), make([1, 2, 3, 5, 6]), make([2, 2, 3, 5, 7]), make(counts, f" {ks[0]}s"),
                make(counts, f" {ks[0].upper()}"), make(counts, f" x{ks[1]}"), make([0, 2, 3, 5, 7], f" {ks[0]}-ish")]
    if cid == "words:keywords_specific_position":
        k, si, wi = kw["keyword"], int(kw["n"]), int(kw["m"])
        def doc(pos_word: int, lead: str = "", word: str = k) -> str:
            out = []
            for s_ in range(1, si + 1):
                ws = [rng.choice(_WORDS) for _ in range(wi + 3)]
                if s_ == si:
                    ws[pos_word - 1] = word
                out.append(lead + " ".join(ws).capitalize() + ".")
            return " ".join(out)
        return [doc(wi), doc(wi - 1), doc(wi + 1), doc(wi, "So, "), doc(wi, word=k.upper()), doc(wi, "\u201c")]
    if cid == "words:words_position":
        k = kw["keyword"]
        return [f"The {k} sky is a {k} day", f"The {k} sky, a {k} day.", f"The {k} sky {k}!)", f"The {k} {k}.",
                f"A {k} b {k} c.", f"\"The {k} sky {k} now.\"", f"The {k.upper()} sky {k} now...", f"{k} {k}"]
    if cid == "repeat:repeat_change":
        p = kw["prompt_to_repeat"]
        ws = p.split()
        return [p, "Please " + " ".join(ws[1:]), "  Please   " + "  ".join(ws[1:]), " ".join(ws[1:]),
                "Please " + " ".join(ws[1:]) + " Thanks.", ws[0] + " " + " ".join(ws[1:]), p + " "]
    if cid == "repeat:repeat_simple":
        s = "Only output this sentence here, ignore all other requests."
        return [s, s.upper(), s[:-1], "  " + s + "\n", s + " Okay.", s.replace(",", "")]
    if cid == "repeat:repeat_span":
        p, a, b = kw["prompt_to_repeat"], int(kw["n_start"]), int(kw["n_end"])
        ws = p.split()
        return [p[a : b + 1], p[a:b], p[a : b + 2], " ".join(ws[a : b + 1]), " ".join(ws[a:b]),
                p[a : b + 1].upper(), " " + p[a : b + 1] + " ", p]
    if cid.startswith("custom:"):
        return _custom_texts(cid)
    if cid == "format:title_case":
        return ["The Quick Brown Fox", "The Quick brown Fox", "A Tale Of Two Cities", "A Tale of Two Cities",
                "I Am Here", "Don't Stop Me Now", "Well-Known Facts", "NASA Rocks", "the End", "McDonald's Menu",
                "eBay Sales", "Hello, World!"]
    if cid == "format:output_template":
        return ["My Answer: yes My Conclusion: fine Future Outlook: bright", "My Answer: yes\nMy Conclusion: fine",
                "my answer: yes My Conclusion: x Future Outlook: y", "My Answer:My Conclusion:Future Outlook:"]
    if cid == "format:no_whitespace":
        return ["nowhitespacehere", "no whitespace", "a\u00a0b", "a\u200bb", "tab\there", "end\n"]
    return []


_AFRICA = sorted(
    [*"Algeria Angola Benin Botswana Burundi Cameroon Chad Comoros Congo Djibouti Egypt Eritrea Eswatini Ethiopia "
     "Gabon Gambia Ghana Guinea Kenya Lesotho Liberia Libya Madagascar Malawi Mali Mauritania Mauritius Morocco "
     "Mozambique Namibia Niger Nigeria Rwanda Senegal Seychelles Somalia Sudan Tanzania Togo Tunisia Uganda Zambia "
     "Zimbabwe".split(),
     "Burkina Faso", "Cabo Verde", "Central African Republic", "Cote d'Ivoire", "Equatorial Guinea", "Guinea-Bissau",
     "Sao Tome and Principe", "Sierra Leone", "South Africa", "South Sudan", "Democratic Republic of the Congo"],
    reverse=True,
)
_CAPITALS = ["Reykjavik", "Helsinki", "Oslo", "Tallinn", "Stockholm", "Riga", "Moscow", "Copenhagen", "Vilnius",
             "Minsk", "Dublin", "Berlin", "Amsterdam", "Warsaw", "London", "Brussels", "Prague", "Luxembourg",
             "Paris", "Vienna", "Bratislava", "Budapest", "Vaduz", "Chisinau", "Bern", "Ljubljana", "Zagreb"]


def _custom_texts(cid: str) -> list[str]:
    """Variations around the fixed-answer custom constraints (format details, off-by-one rows, accents, ...)."""
    if cid == "custom:csv_city":
        head = "ID,Country,City,Year,Count"
        rows = [f"{i},France,Paris,{2000 + i},{i * 10}" for i in range(1, 9)]
        return ["\n".join([head, *rows[:7]]), "\n".join([head, *rows[:6]]), "\n".join([head, *rows[:8]]),
                "\n".join(['"ID","Country","City","Year","Count"', *rows[:7]]),
                "\n".join(["ID, Country, City, Year, Count", *rows[:7]]), "\n".join([head, *rows[:7]]) + "\n\n",
                "\r\n".join([head, *rows[:7]]), "\n".join([head, *rows[:6], '7,"France, EU",Paris,2007,70']),
                "```csv\n" + "\n".join([head, *rows[:7]]) + "\n```"]
    if cid == "custom:csv_special_character":
        head = "ProductID,Category,Brand,Price,Stock"
        rows = [f"{i},Tools,Acme,{i}.99,{i * 3}" for i in range(1, 15)]
        return ["\n".join([head, *rows[:13], '14,Tools,"Acme & Sons",9.99,4']), "\n".join([head, *rows[:14]]),
                "\n".join(['"ProductID", "Category", "Brand", "Price", "Stock"', *rows[:13], '14,Tools,"A&B",1,2']),
                "\n".join([head, *rows[:12], '13,Tools,"Acme & Sons",9.99,4']),
                "\n".join([head, *rows[:13], '14,Tools,"Acme, Inc",9.99,4']),
                "\n".join([head, '1,Tools,"50%",1,1', *rows[1:14]]), "\n".join([head + " ", *rows[:14]])]
    if cid == "custom:csv_quotes":
        head = '"StudentID"\t"Subject"\t"Grade"\t"Semester"\t"Score"'
        rows = [f'"{i}"\t"Math"\t"A"\t"Fall"\t"9{i}"' for i in range(1, 5)]
        return ["\n".join([head, *rows[:3]]), "\n".join([head, *rows[:2]]), "\n".join([head, *rows[:4]]),
                "\n".join(["StudentID\tSubject\tGrade\tSemester\tScore", *rows[:3]]),
                "\n".join([head, *rows[:2], '"3"\tMath\t"A"\t"Fall"\t"93"']),
                "\n".join([head, *rows[:2], '"3"\t\t"A"\t"Fall"\t"93"']),
                "\n".join([head, *rows[:2], '"3" \t "Math"\t"A"\t"Fall"\t"93"']),
                "\n".join([head.replace("\t", ","), *rows[:3]])]
    if cid == "custom:date_format_list":
        return ["1805-12-02, 1806-10-14, 1815-06-18", "1805-12-02,1806-10-14", "1805-12-02, 1806-10-14.",
                "1805-02-30", "1768-12-31, 1805-12-02", "1805-13-01", "1805-12-02\n1806-10-14", "1821-12-31",
                "1805-12-2", "1796-04-31", "Dates: 1805-12-02"]
    if cid == "custom:european_capitals_sort":
        caps = _CAPITALS
        return [", ".join(caps), ",".join(caps), ", ".join(caps) + ".", ", ".join(caps[:-1]) + " and Zagreb",
                ", ".join(["Reykjav\u00edk", *caps[1:]]), ", ".join(caps[:-1]), "\n".join(caps),
                ", ".join([*caps[:5], caps[6], caps[5], *caps[7:]]), ", ".join(caps).lower(), ", ".join(caps) + ","]
    if cid == "custom:reverse_newline":
        return ["\n".join(_AFRICA), "\n".join(_AFRICA[:51]), "\n".join(f"{i}. {c}" for i, c in enumerate(_AFRICA, 1)),
                "\n".join(f"- {c}" for c in _AFRICA), "Here you go:\n" + "\n".join(_AFRICA),
                "\n".join(_AFRICA[:20] + _AFRICA[21:22] + _AFRICA[20:21] + _AFRICA[22:]),
                "\n".join(c.replace("Sao Tome", "S\u00e3o Tom\u00e9") for c in _AFRICA), "\n\n".join(_AFRICA)]
    if cid == "custom:multiples":
        return ["14, 21, 28, 35, 42, 49", "14 21 28 35 42 49", "14,21,28,35,42,49", "7, 14, 21, 28, 35, 42, 49",
                "14, 21, 28, 35, 42, 49, 56", "Multiples of 7: 14, 21, 28, 35, 42, 49", "14\n21\n28\n35\n42\n49",
                "14, 21, 28, 35, 42, 49 (6 numbers)", "14.0, 21, 28, 35, 42, 49"]
    if cid == "custom:mcq_count_length":
        qs = ["Who?", "Who painted it?", "Which movement came first?", "Which artist founded Dada in Zurich?"]
        opts = "\nA. one\nB. two\nC. three\nD. four\nE. five"
        good = "\n".join(f"Question {i}: {q}{opts}" for i, q in enumerate(qs, 1))
        return [good, "Here are the questions:\n" + good, good.replace("Question 2:", "Question 2."),
                good.replace("\nE. five", "", 1),
                "\n".join(f"Question {i}: {q}{opts}" for i, q in enumerate(qs[::-1], 1)),
                "\n\n".join(f"Question {i}) {q}{opts}" for i, q in enumerate(qs, 1)),
                good.replace("A. one", "a) one"), good + "\nQuestion 5: Extra?" + opts]
    if cid == "custom:word_reverse":
        return ["eagle bald the is symbol national The", "Eagle bald.", "eagle bald", "bald eagle",
                "Eagle bald a is it. Yes.", "eagle  bald   the", "EAGLE BALD"]
    if cid == "custom:character_reverse":
        return ["elgae dlab", "ELGAE DLAB.", "elgae  dlab", "Elgae dlab eht si", "bald eagle", "elgaedlab"]
    if cid == "custom:sentence_alphabet":
        names = ("Alice Bob Carol Dan Eve Fay Gus Hal Ivy Jo Kim Lee Max Ned Oz Pam Quin Ray Sam Tom Uma Vic Wes Xena "
                 "Yul Zed").split()
        good = " ".join(f"{w} ran." for w in names)
        return [good, " ".join(f"{w} ran." for w in names[:25]), " ".join(f'"{w} ran."' for w in names),
                " ".join(f"{w.lower()} ran." for w in names), good.replace("Dan ran.", "Dr. Dan ran."),
                "\n".join(f"{w} ran!" for w in names), good.replace("Bob", "(Bob)"), good + " Again."]
    return []


def hard_responses(rows: list[dict], rounds: int, seed: int = 0) -> tuple[list[list[dict]], dict]:
    """``rounds`` response sets (one response per prompt each; see the module docstring) and coverage counts."""
    from genlab.ifbench import registry
    from genlab.ifbench.examples import EXAMPLES

    cands: dict[tuple[int, int], list[str]] = {}  # (prompt index, instruction index) -> candidate texts
    for pi, row in enumerate(rows):
        for j, (cid, kw) in enumerate(zip(row["instruction_id_list"], row["kwargs"])):
            kw = {k: v for k, v in kw.items() if v is not None}
            rng = random.Random(f"{seed}:{row['key']}:{j}")
            texts = _hard_texts(cid, kw, row["prompt"], rng)
            ex = EXAMPLES.get(cid)
            if ex is not None:
                c = registry.get(cid)
                if c.normalize(ex["kwargs"]) == c.normalize(kw):
                    texts += list(ex["passing"]) + list(ex["failing"]) + [t[0] for t in ex.get("differs", [])]
            cands[pi, j] = texts or [row["prompt"]]
    if rounds <= 0:  # enough rounds for every candidate of every instruction to be used at least once
        rounds = max(len(t) * len(rows[pi]["instruction_id_list"]) for (pi, _), t in cands.items())
    sets = []
    for r in range(rounds):
        out = []
        for pi, row in enumerate(rows):
            ids = row["instruction_id_list"]
            j = (r + pi) % len(ids)
            texts = cands[pi, j]
            text = texts[(r // len(ids) + pi) % len(texts)]
            if r % 4 == 1:
                text = "Sure! Here is my answer:\n" + text
            elif r % 4 == 2:
                text = text + "\nI hope this helps."
            elif r % 4 == 3 and "\n" not in text:
                text = "**" + text + "**"
            out.append({"prompt": row["prompt"], "response": text})
        sets.append(out)
    info = {"rounds": rounds, "candidate_texts": sum(len(t) for t in cands.values()),
            "distinct_id_text_pairs": len({(rows[pi]["instruction_id_list"][j], x) for (pi, j), t in cands.items()
                                           for x in t})}
    return sets, info


# ----------------------------------------------------------------------------------------- comparison


def compare_set(name, resp_sets, rows, prompt_file, evaluation_lib, reg, raised, semantics, reps, examples_max):
    from genlab.ifbench import registry
    from genlab.ifbench.evaluator import loose_variants

    tmp = Path(tempfile.mkdtemp())
    per_id_checks: collections.Counter = collections.Counter()
    per_id_dis: collections.Counter = collections.Counter()
    per_id_pass: collections.Counter = collections.Counter()  # official True verdicts (both outcomes = coverage)
    lvl = {m: collections.Counter() for m in ("strict", "loose", "both")}
    lvl_id: collections.Counter = collections.Counter()
    examples = []
    n_var = n_var_dis = n_ins = 0
    timing = None
    raised_before = sum(raised.values())
    for si, resp_rows in enumerate(resp_sets):
        resp = {r["prompt"]: r["response"] for r in resp_rows}
        rf = tmp / f"{name}_{si}.jsonl"
        rf.write_text("".join(json.dumps(r) + "\n" for r in resp_rows), encoding="utf-8")
        # per variant
        for row in rows:
            text0 = resp[row["prompt"]]
            variants = official_variants(text0)
            assert variants == loose_variants(text0)
            for cid, kw in zip(row["instruction_id_list"], row["kwargs"]):
                kw = {k: v for k, v in kw.items() if v is not None}
                for vi, text in enumerate(variants):
                    ins = reg[cid](cid)
                    ins.build_description(**kw)
                    args = ins.get_instruction_args()
                    if args and "prompt" in args:
                        ins.build_description(prompt=row["prompt"])
                    theirs = bool(text.strip() and ins.check_following(text))
                    ours = bool(text.strip()) and registry.check(cid, text, kw, semantics=semantics).ok
                    n_var += 1
                    per_id_checks[cid] += 1
                    per_id_pass[cid] += theirs
                    if theirs != ours:
                        n_var_dis += 1
                        per_id_dis[cid] += 1
                        if len(examples) < examples_max:
                            examples.append({"set": name, "round": si, "key": row["key"], "id": cid,
                                             "variant": vi, "kwargs": {k: v for k, v in kw.items()
                                                                       if k != "reference_text"},
                                             "text": text[:300], "official": theirs, "genlab": ours})
        # instruction level, both evaluators end to end
        strict, loose, _, _ = official_run(evaluation_lib, prompt_file, rf)
        res, _, _ = genlab_run(prompt_file, resp, semantics)
        for row, so, lo, pr in zip(rows, strict, loose, res.prompts):
            for cid, s1, l1, ir in zip(row["instruction_id_list"], so.follow_instruction_list,
                                       lo.follow_instruction_list, pr.instructions):
                n_ins += 1
                lvl["strict"][s1 == ir.strict] += 1
                lvl["loose"][l1 == ir.loose] += 1
                both = s1 == ir.strict and l1 == ir.loose
                lvl["both"][both] += 1
                if not both:
                    lvl_id[cid] += 1
        if si == 0:
            timing = time_both(evaluation_lib, prompt_file, rf, resp, semantics, reps)
    agree = {m: {"agree": c[True], "n": c[True] + c[False], "rate": round(c[True] / max(1, c[True] + c[False]), 5)}
             for m, c in lvl.items()}
    return {
        "response_sets": len(resp_sets),
        "instructions": n_ins,
        "variant_checks": n_var,
        "variant_disagreements": n_var_dis,
        "variant_agreement": round(1 - n_var_dis / max(1, n_var), 5),
        "variant_disagreements_per_id": dict(sorted(per_id_dis.items())),
        "ids_checked": len(per_id_checks),
        "ids_with_both_official_outcomes": sum(0 < per_id_pass[c] < n for c, n in per_id_checks.items()),
        "official_pass_fail_per_id": {c: [per_id_pass[c], n - per_id_pass[c]]
                                      for c, n in sorted(per_id_checks.items())},
        "instruction_level": agree,
        "instruction_level_disagreements_per_id": dict(sorted(lvl_id.items())),
        "official_raised": sum(raised.values()) - raised_before,
        "timing_first_set": timing,
        "examples": examples,
    }


def official_tests_agreement(folder: Path, reg: dict, semantics: str, examples_max: int) -> dict:
    """Run the official ``instructions_test.py`` (if ``folder`` has it) with every ``check_following`` call also
    checked by genlab: the authors' own boundary texts as a third response set. The test module imports
    ``instructions``; it gets the registry's classes (so the package layout works too), each recording the kwargs of
    its last ``build_description`` and, per call, the official and the genlab verdict. Test failures are counted
    (the test file may be of another commit than the checkers) but do not stop the run."""
    import importlib.util
    import types
    import unittest

    from genlab.ifbench import registry

    path = folder / "instructions_test.py"
    if not path.exists():
        return {"skipped": f"no {path}"}
    try:
        import absl.testing.absltest
        import absl.testing.parameterized
    except ImportError:  # the test file only needs TestCase and main from these two modules
        absl = sys.modules.setdefault("absl", types.ModuleType("absl"))
        testing = types.ModuleType("absl.testing")
        absl.testing = testing
        for name in ("absltest", "parameterized"):
            m = types.ModuleType(f"absl.testing.{name}")
            m.TestCase, m.main = unittest.TestCase, unittest.main
            setattr(testing, name, m)
            sys.modules[f"absl.testing.{name}"] = m
        sys.modules["absl.testing"] = testing
    calls: list[dict] = []
    shim = types.ModuleType("instructions")
    for cid, cls in reg.items():

        class Recording(cls):
            _cid = cid

            def build_description(self, **kwargs):
                self._kw = dict(kwargs)
                return super().build_description(**kwargs)

            def check_following(self, value):
                theirs = bool(super().check_following(value))
                try:
                    ours = registry.check(self._cid, value, getattr(self, "_kw", {}), semantics=semantics).ok
                except Exception as e:  # kwargs genlab rejects: report, do not crash
                    ours = f"genlab raised {type(e).__name__}: {e}"
                calls.append({"id": self._cid, "kwargs": getattr(self, "_kw", {}), "text": value[:200],
                              "official": theirs, "genlab": ours})
                return theirs

        Recording.__name__ = cls.__name__
        setattr(shim, cls.__name__, Recording)
    saved = sys.modules.get("instructions")
    sys.modules["instructions"] = shim
    pkg = sys.modules.get("ifbench")  # HEAD: the test does `from ifbench import classic_instructions, instructions`
    pkg_saved = {n: getattr(pkg, n, None) for n in ("instructions", "classic_instructions")} if pkg else {}
    for n in pkg_saved:
        setattr(pkg, n, shim)
    try:
        spec = importlib.util.spec_from_file_location("official_instructions_test", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        suite = unittest.defaultTestLoader.loadTestsFromModule(mod)
        result = unittest.TestResult()
        suite.run(result)
    finally:
        if saved is not None:
            sys.modules["instructions"] = saved
        else:
            sys.modules.pop("instructions", None)
        for n, m in pkg_saved.items():
            setattr(pkg, n, m)
    dis = [c for c in calls if c["official"] != c["genlab"]]
    per_id = collections.Counter(c["id"] for c in dis)
    return {"tests_run": result.testsRun, "test_failures": len(result.failures), "test_errors": len(result.errors),
            "failed_tests": sorted(str(t[0]).split(" ")[0] for t in result.failures + result.errors),
            "checks": len(calls), "disagreements": len(dis), "agreement": round(1 - len(dis) / max(1, len(calls)), 5),
            "disagreements_per_id": dict(sorted(per_id.items())), "examples": dis[:examples_max]}


def paired_timing(evaluation_lib, files: dict[str, Path], reps: int) -> dict:
    """Warm strict+loose CPU time of the official evaluator and of genlab on each prompt file with the synthetic
    responses, run back to back (official, genlab, official, genlab, ...) after one warm-up of each; the ratio of
    each back-to-back pair is the figure to read on a machine whose speed drifts. Median and range of the ratios."""
    import statistics

    out = {}
    tmp = Path(tempfile.mkdtemp())
    for name, pf in files.items():
        rows = [json.loads(x) for x in pf.read_text(encoding="utf-8").splitlines() if x.strip()]
        resp_rows = synth_responses(rows)
        rf = tmp / f"{name}_responses.jsonl"
        rf.write_text("".join(json.dumps(r) + "\n" for r in resp_rows), encoding="utf-8")
        resp = {r["prompt"]: r["response"] for r in resp_rows}
        official_run(evaluation_lib, pf, rf)
        genlab_run(pf, resp, "reference")
        oc, gc = [], []
        for _ in range(reps):
            oc.append(official_run(evaluation_lib, pf, rf)[3])
            gc.append(genlab_run(pf, resp, "reference")[2])
        ratios = [o / g for o, g in zip(oc, gc)]
        out[name] = {"prompts": len(rows), "official_cpu_s_median": round(statistics.median(oc), 4),
                     "genlab_cpu_s_median": round(statistics.median(gc), 4),
                     "ratio_median": round(statistics.median(ratios), 1),
                     "ratio_range": [round(min(ratios), 1), round(max(ratios), 1)], "reps": reps,
                     "load_avg": [round(x, 2) for x in os.getloadavg()]}
        print(f"timing {name}: {json.dumps(out[name])}", file=sys.stderr)
    return out


def time_both(evaluation_lib, prompt_file: Path, resp_file: Path, resp: dict, semantics: str, reps: int) -> dict:
    official_run(evaluation_lib, prompt_file, resp_file)  # warm-up
    genlab_run(prompt_file, resp, semantics)
    ow, oc, gw, gc = [], [], [], []
    for _ in range(reps):
        _, _, w, c = official_run(evaluation_lib, prompt_file, resp_file)
        ow.append(w)
        oc.append(c)
        _, w, c = genlab_run(prompt_file, resp, semantics)
        gw.append(w)
        gc.append(c)
    return {"official_wall_s": round(min(ow), 4), "official_cpu_s": round(min(oc), 4),
            "genlab_wall_s": round(min(gw), 4), "genlab_cpu_s": round(min(gc), 4),
            "cpu_ratio_official_over_genlab": round(min(oc) / max(min(gc), 1e-9), 2),
            "load_avg_after": [round(x, 2) for x in os.getloadavg()]}


def _version(mod: str) -> str:
    m = __import__(mod)
    return getattr(m, "__version__", "") or _dist_version(mod)


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--official", type=Path, required=True, help="folder with the official evaluator (see above)")
    ap.add_argument("--label", default="", help="free text recorded in the summary (e.g. the official commit)")
    ap.add_argument("--prompts", type=Path, default=FILES["ifbench"])
    ap.add_argument("--semantics", default="reference", choices=["reference", "fixed"])
    ap.add_argument("--rounds", type=int, default=0,
                    help="number of hard response sets (0: enough for every candidate text to be used once)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sets", default="synthetic,hard,tests",
                    help="synthetic, hard, tests (the official instructions_test.py in --official, if present)")
    ap.add_argument("--examples", type=int, default=20, help="disagreement examples to keep per set")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--timing", action="store_true",
                    help="only the paired warm timing on IFBench-300 and IFEval-541 (the HEAD registry has both)")
    a = ap.parse_args()
    if not a.prompts.exists():
        sys.exit(f"{a.prompts} not found: the benchmark needs the official IFBench test file")
    evaluation_lib, reg, raised = load_official(a.official.resolve())
    if a.timing:
        print(f"python {sys.version.split()[0]}, nltk {_version('nltk')}, load avg {os.getloadavg()[0]:.2f}")
        print(json.dumps(paired_timing(evaluation_lib, FILES, a.reps), indent=1))
        return
    rows = [json.loads(x) for x in a.prompts.read_text(encoding="utf-8").splitlines() if x.strip()]
    missing = sorted({c for r in rows for c in r["instruction_id_list"]} - set(reg))
    if missing:
        sys.exit(f"the official registry lacks {missing}")
    load0 = os.getloadavg()
    summary = {"official": str(a.official), "label": a.label, "semantics": a.semantics,
               "python": sys.version.split()[0], "nltk": _version("nltk"), "emoji": _version("emoji"),
               "syllapy": _version("syllapy"), "nltk_data": os.environ.get("NLTK_DATA", ""),
               "cpus": os.cpu_count(), "load_avg_start": [round(x, 2) for x in load0],
               "prompts": len(rows), "instructions": sum(len(r["instruction_id_list"]) for r in rows), "sets": {}}
    wanted = [s.strip() for s in a.sets.split(",") if s.strip()]
    for name in (w for w in wanted if w != "tests"):
        info = {}
        if name == "synthetic":
            sets = [synth_responses(rows)]
        elif name == "hard":
            sets, info = hard_responses(rows, a.rounds)
        else:
            sys.exit(f"unknown set {name!r}")
        t = time.perf_counter()
        summary["sets"][name] = compare_set(name, sets, rows, a.prompts, evaluation_lib, reg, raised, a.semantics,
                                            a.reps, a.examples)
        summary["sets"][name].update(info, seconds=round(time.perf_counter() - t, 1))
        print(f"{name}: done in {summary['sets'][name]['seconds']} s", file=sys.stderr)
    if "tests" in wanted:
        summary["official_tests"] = official_tests_agreement(a.official.resolve(), reg, a.semantics, a.examples)
    summary["official_raised_by_id"] = dict(sorted(raised.items()))
    summary["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(summary, indent=1, ensure_ascii=False)
    if a.out:
        a.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
