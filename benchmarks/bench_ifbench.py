"""Speed and parity benchmark for genlab.ifbench.

    NLTK_DATA=tests/resources/nltk_data python benchmarks/bench_ifbench.py [--ref-ifeval DIR] [--reps 3]

For each official prompt file (IFBench test, 300 prompts; IFEval, 541 prompts, both shipped in ``tests/resources``) it
builds a deterministic synthetic response set (a mix of prose, markdown, lists, JSON, quotes, emoji, CJK,
all-caps / lowercase text and copies of the prompt, ~0.3–2 kB per response), then reports

* warm strict+loose time of ``genlab.ifbench.evaluate`` (best of ``--reps``, after one warm-up run);
* end-to-end time of ``python -m genlab.ifbench.cli eval --prompts P --responses R`` (process start included);
* the offline-vs-real-data agreement: verdicts with NLTK data removed from the search path vs with it;
* optionally (``--ref-ifbench DIR``: a folder holding ``evalscope/benchmarks/ifbench/*.py`` from the
  ``evalscope`` wheel, a third-party copy of the IFBench checkers, with a stub ``evalscope/utils/resource_utils.py``
  defining ``check_nltk_data``) verdict agreement per IFBench id on every loose variant, with the copy's
  sentence splitter switched to ``nltk.sent_tokenize`` as at IFBench HEAD. That copy is of an older epoch with
  some PR #34 fixes, so the differing ids must be read against docs/ifbench.md;
* optionally (``--langdetect``) the labels of genlab's batched language detector vs seeded ``langdetect`` on
  the responses, their loose variants and ~3,000 multilingual mixtures and random strings, with both CPU times;
* optionally (``--ref-ifeval DIR``: a folder holding ``lm_eval/tasks/ifeval/*.py`` extracted from the
  ``lm-eval`` wheel, i.e. Google's IFEval checkers) instruction-level agreement with that reference on the
  IFEval file and the reference's own warm time with langdetect seeded.

Last results are recorded in docs/ifbench.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / "tests" / "resources"
FILES = {
    "ifbench": SHARED / "ifbench" / "IFBench_test.jsonl",
    "ifeval": SHARED / "ifeval" / "input_data.jsonl",
}

_PROSE = [
    "The river runs past the old mill, and the children play in the shallow water near the bridge.",
    "In 1805 the army crossed the Danube; by December it had reached Austerlitz.",
    "Why do people love the sea? Maybe because it never stays the same!",
    "Dr. Smith, Mr. Jones and Ms. Lee met at 3.30 p.m. to discuss the U.S. budget.",
    "I think we should go now, because they are waiting for us at the station.",
    "Cats chase mice quickly; dogs bark loudly: birds sing sweetly.",
    "\"She said 'he told me \"no\" twice' before leaving,\" John explained.",
    "This is the end of the story. Any other questions?",
]
_EXTRA = [
    "* first point\n* second point\n  - detail\n* third point",
    "- alpha\n- beta",
    "**Bold heading**\n\nSome *highlighted* text and *another highlight*.",
    "```json\n{\"name\": \"test\", \"values\": [1, 2, 3]}\n```",
    "<<A Title>>",
    "P.S. Thanks for reading.",
    "SECTION 1\nIntro.\nSECTION 2\nBody.",
    "Paragraph one.\n***\nParagraph two.",
    "I love pizza 🍕. It is great 😀!",
    "猫 cat 犬 dog 鳥 bird",
    "THIS PART IS WRITTEN IN CAPITAL LETTERS FOR EMPHASIS.",
    "<i>A thesis statement.</i> Followed by support.",
    "My Answer: yes My Conclusion: fine Future Outlook: bright",
    "(a [b {c (d [e])}])",
    "14, 21, 28, 35, 42, 49",
]


def synth_responses(prompts: list[dict], seed: int = 0) -> list[dict]:
    """A deterministic synthetic response per prompt (stand-in for model outputs)."""
    rng = random.Random(seed)
    out = []
    for p in prompts:
        r = rng.random()
        if r < 0.06:
            text = p["prompt"]  # copy tasks
        elif r < 0.10:
            text = '"' + rng.choice(_PROSE) + '"'
        elif r < 0.15:
            text = " ".join(rng.sample(_PROSE, 3)).lower()
        elif r < 0.19:
            text = " ".join(rng.sample(_PROSE, 3)).upper()
        elif r < 0.22:
            text = "Bonjour, je suis très heureux de vous rencontrer aujourd'hui dans cette belle ville."
        else:
            parts = [rng.choice(_PROSE) for _ in range(rng.randint(2, 12))]
            parts += rng.sample(_EXTRA, rng.randint(0, 3))
            rng.shuffle(parts)
            text = ("\n\n" if rng.random() < 0.5 else "\n").join(parts)
        out.append({"prompt": p["prompt"], "response": text})
    return out


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def time_ours(prompt_file: Path, resp_file: Path, reps: int, warm_up: bool = True) -> tuple[float, float, object]:
    from genlab.ifbench import evaluate, langid, load_prompts, load_responses, nlp

    items = load_prompts(prompt_file)
    resp = load_responses(resp_file)
    if warm_up:
        evaluate(items, resp, workers=1)  # loads NLTK modules, data, langdetect profiles
    ts, cs = [], []
    for _ in range(reps):
        nlp.clear_caches()  # every per-text memo: each repetition does all the work again
        langid.clear_cache()
        t, c = time.perf_counter(), time.process_time()
        res = evaluate(items, resp, workers=1)
        ts.append(time.perf_counter() - t)
        cs.append(time.process_time() - c)
    return min(ts), min(cs), res


def time_cli(prompt_file: Path, resp_file: Path, reps: int) -> tuple[float, float]:
    """Best wall time and best CPU time (user + system of the child) of the CLI, process start included."""
    import resource

    ts, cs = [], []
    for _ in range(reps):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "genlab.ifbench.cli", "eval", "--prompts", str(prompt_file), "--responses",
             str(resp_file), "--bootstrap", "0"],
            check=True, capture_output=True, cwd=ROOT,
        )
        ts.append(time.perf_counter() - t)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cs.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return min(ts), min(cs)


def offline_agreement(prompt_file: Path, resp_file: Path) -> dict:
    """Run the evaluation in a subprocess with NLTK data hidden; compare per-instruction strict/loose verdicts."""
    code = (
        "import json,sys\n"
        "from genlab.ifbench import evaluate, load_prompts, load_responses\n"
        "r = evaluate(load_prompts(sys.argv[1]), load_responses(sys.argv[2]), workers=1)\n"
        "print(json.dumps([[ [i.id, i.strict, i.loose] for i in p.instructions] for p in r.prompts]))\n"
    )
    outs = {}
    for mode in ("real", "offline"):
        env = dict(os.environ)
        if mode == "offline":
            env["NLTK_DATA"] = "/nonexistent"
            env["HOME"] = tempfile.mkdtemp()
        outs[mode] = json.loads(subprocess.run([sys.executable, "-c", code, str(prompt_file), str(resp_file)],
                                               check=True, capture_output=True, text=True, env=env, cwd=ROOT).stdout)
    per: dict[str, list[int]] = {}
    tot = dis = 0
    for pr, po in zip(outs["real"], outs["offline"]):
        for a, b in zip(pr, po):
            d = int(a[1] != b[1] or a[2] != b[2])
            per.setdefault(a[0], [0, 0])
            per[a[0]][0] += 1
            per[a[0]][1] += d
            tot += 1
            dis += d
    return {"instructions": tot, "disagree": dis, "per_id": {k: v for k, v in per.items() if v[1]}}


def langdetect_agreement(responses: list[str], n: int = 3000, seed: int = 1) -> dict:
    """genlab's batched detector vs seeded ``langdetect`` itself: the benchmark's responses and their loose
    variants, ``n`` mixtures of sentences in 17 languages/scripts, and random character soup."""
    from genlab.ifbench import langid
    from genlab.ifbench.evaluator import loose_variants

    rng = random.Random(seed)
    sentences = [
        "Ceci est un petit texte en français, avec quelques mots.", "This is an English sentence about rivers.",
        "Der schnelle braune Fuchs springt über den faulen Hund.", "これは日本語の文章です。",
        "Hola, ¿cómo estás? Espero que todo vaya bien.", "Olá, tudo bem? Espero que sim, meu amigo.",
        "Это русский текст о погоде.", "यह हिंदी में एक वाक्य है।", "Questo è un testo italiano.",
        "Dit is een Nederlandse zin.", "这是一个中文句子。", "안녕하세요 반갑습니다", "Tiếng Việt có dấu",
        "مرحبا بكم في المدينة", "HELLO WORLD", "12345", "x",
    ]  # fmt: skip
    soup = "aAbBzZ  ..,,\n\t1ÀéßİıŞș ț日本語カタカナひらがな한국어ثبتپی Ấ ẠxX--"
    texts = list(dict.fromkeys(v for r in responses for v in loose_variants(r)))
    texts += [" ".join(rng.choice(sentences) for _ in range(rng.randint(1, 6))) for _ in range(2 * n // 3)]
    texts += ["".join(rng.choice(soup) for _ in range(rng.randint(0, 60))) for _ in range(n // 3)]
    c = time.process_time()
    ref = [langid._detect_reference(t) for t in texts]
    ref_s = time.process_time() - c
    langid.clear_cache()
    c = time.process_time()
    langid.detect_many(texts)
    ours_s = time.process_time() - c
    differ = [t for t, r in zip(texts, ref) if langid._MEMO[t] != r]
    return {"texts": len(texts), "differ": len(differ), "langdetect_cpu_s": round(ref_s, 2),
            "genlab_batched_cpu_s": round(ours_s, 2)}  # fmt: skip


def load_lmeval_reference(ref_dir: Path):
    """Import Google's IFEval checkers as shipped in lm-eval (no lm-eval install needed)."""
    if "immutabledict" not in sys.modules:
        m = types.ModuleType("immutabledict")
        m.immutabledict = dict
        sys.modules["immutabledict"] = m
    sys.path.insert(0, str(ref_dir))
    import langdetect

    langdetect.DetectorFactory.seed = 0
    from lm_eval.tasks.ifeval import instructions_registry

    return instructions_registry.INSTRUCTION_DICT


def reference_eval(reg, rows: list[dict], resp: dict[str, str]):
    """Google's evaluation_lib strict + loose loop (nulls dropped, fresh checker per instruction)."""
    out = []
    for mode in ("strict", "loose"):
        res = []
        for row in rows:
            response = resp[row["prompt"]]
            if mode == "strict":
                variants = [response]
            else:
                r = response.split("\n")
                f, la, b = "\n".join(r[1:]).strip(), "\n".join(r[:-1]).strip(), "\n".join(r[1:-1]).strip()
                variants = [response, response.replace("*", ""), f, la, b, f.replace("*", ""), la.replace("*", ""),
                            b.replace("*", "")]
            flags = []
            for cid, kw in zip(row["instruction_id_list"], row["kwargs"]):
                ins = reg[cid](cid)
                ins.build_description(**{k: v for k, v in kw.items() if v is not None})
                args = ins.get_instruction_args()
                if args and "prompt" in args:
                    ins.build_description(prompt=row["prompt"])
                flags.append(any(v.strip() and ins.check_following(v) for v in variants))
            res.append(flags)
        out.append(res)
    return out


def ifbench_copy_agreement(ref_dir: Path, rows: list[dict], resp: dict[str, str]) -> dict:
    """Per-id disagreements between our reference semantics and evalscope's IFBench copy (see module doc)."""
    import collections

    import nltk

    sys.path.insert(0, str(ref_dir))
    from evalscope.benchmarks.ifbench import instructions_registry as reg
    from evalscope.benchmarks.ifbench import instructions_util as util

    from genlab.ifbench import registry
    from genlab.ifbench.evaluator import loose_variants

    util.split_into_sentences = nltk.sent_tokenize
    diff: collections.Counter = collections.Counter()
    n = 0
    for row in rows:
        for cid, kw in zip(row["instruction_id_list"], row["kwargs"]):
            kw = {k: (int(v) if isinstance(v, float) and v.is_integer() else v) for k, v in kw.items() if v is not None}
            for text in loose_variants(resp[row["prompt"]]):
                ins = reg.INSTRUCTION_DICT[cid](cid)
                try:
                    ins.build_description(**kw)
                    theirs = bool(text.strip() and ins.check_following(text))
                except Exception:
                    theirs = None
                ours = bool(text.strip() and registry.check(cid, text, kw).ok)
                n += 1
                diff[cid] += theirs != ours
    return {"checks": n, "disagree": sum(diff.values()), "per_id": {k: v for k, v in diff.items() if v}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--ref-ifeval", type=Path, default=None)
    ap.add_argument("--ref-ifbench", type=Path, default=None)
    ap.add_argument("--skip-offline", action="store_true")
    ap.add_argument("--langdetect", action="store_true", help="also compare language detection with langdetect")
    a = ap.parse_args()
    if not SHARED.exists():
        sys.exit(f"{SHARED} not found: the benchmark needs the official prompt files")
    load = os.getloadavg()
    print(f"python {sys.version.split()[0]}, NLTK_DATA={os.environ.get('NLTK_DATA', '')}, load avg {load[0]:.2f}")
    tmp = Path(tempfile.mkdtemp())
    results = {}
    for name, pf in FILES.items():
        rows = _rows(pf)
        rf = tmp / f"{name}_responses.jsonl"
        resp_rows = synth_responses(rows)
        rf.write_text("".join(json.dumps(r) + "\n" for r in resp_rows), encoding="utf-8")
        warm, warm_cpu, res = time_ours(pf, rf, a.reps)
        cli, cli_cpu = time_cli(pf, rf, a.reps)
        s = res.summary(bootstrap=0)
        line = {
            "prompts": len(rows),
            "warm_strict_loose_s": round(warm, 4),
            "warm_strict_loose_cpu_s": round(warm_cpu, 4),
            "cli_end_to_end_s": round(cli, 3),
            "cli_end_to_end_cpu_s": round(cli_cpu, 3),
            "loose_prompt_level": round(s["loose"]["prompt_level"], 4),
        }
        if not a.skip_offline:
            line["offline_vs_real"] = offline_agreement(pf, rf)
        if name == "ifbench" and a.ref_ifbench:
            line["vs_evalscope_copy"] = ifbench_copy_agreement(
                a.ref_ifbench, rows, {r["prompt"]: r["response"] for r in resp_rows}
            )
        if name == "ifeval" and a.langdetect:
            line["langdetect_vs_genlab"] = langdetect_agreement([r["response"] for r in resp_rows])
        if name == "ifeval" and a.ref_ifeval:
            reg = load_lmeval_reference(a.ref_ifeval)
            resp = {r["prompt"]: r["response"] for r in resp_rows}
            reference_eval(reg, rows, resp)  # warm-up
            ts, cs, ratios = [], [], []
            for _ in range(a.reps):  # each reference run right after one of ours: the ratio of a pair is steadier
                ours_cpu = time_ours(pf, rf, 1, warm_up=False)[1]  # than separate minima on a drifting machine
                t, c = time.perf_counter(), time.process_time()
                ref = reference_eval(reg, rows, resp)
                ts.append(time.perf_counter() - t)
                cs.append(time.process_time() - c)
                ratios.append(cs[-1] / ours_cpu)
            line["reference_warm_s"] = round(min(ts), 3)
            line["reference_warm_cpu_s"] = round(min(cs), 3)
            line["speedup_vs_reference_cpu"] = round(min(cs) / warm_cpu, 1)
            line["speedup_paired_median"] = round(statistics.median(ratios), 1)
            line["speedup_paired_range"] = [round(min(ratios), 1), round(max(ratios), 1)]
            agree = {}
            for k, mode in enumerate(("strict", "loose")):
                ours = [[i.__dict__[mode] for i in p.instructions] for p in res.prompts]
                flat = [(x, y, cid) for o, r_, row in zip(ours, ref[k], rows)
                        for x, y, cid in zip(o, r_, row["instruction_id_list"])]
                same = sum(x == y for x, y, _ in flat)
                agree[mode] = {"agreement": round(same / len(flat), 5), "n": len(flat),
                               "differ_ids": sorted({c for x, y, c in flat if x != y})}
            line["parity_vs_reference"] = agree
        results[name] = line
        print(f"{name}: {json.dumps(line)}")
    print(f"median load during run: {statistics.median([os.getloadavg()[0], load[0]]):.2f}")


if __name__ == "__main__":
    main()
