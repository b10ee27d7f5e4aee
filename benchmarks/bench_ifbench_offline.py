"""Agreement of the offline text rules with the real NLTK data, per constraint.

    NLTK_DATA=tests/resources/nltk_data python benchmarks/bench_ifbench_offline.py [--rounds 5] [--examples 10]

For both official prompt files: every instruction × every distinct non-empty loose variant of its synthetic
response (``bench_ifbench.synth_responses``), plus, for IFBench, ``--rounds`` near-boundary response sets of
``bench_ifbench_official.hard_responses``. Each (id, kwargs, text) is checked strictly with the real data and with
the offline rules (``nlp.reset("real")`` / ``nlp.reset("offline")``, same process); prints the number of checks,
the disagreements per id and a few examples with the sentences that differ. Last result in docs/ifbench.md.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ifbench import FILES, _rows, synth_responses
from bench_ifbench_official import hard_responses


def triples(rounds: int) -> list[tuple[str, dict, str]]:
    from genlab.ifbench.evaluator import loose_variants

    out = []
    for name, pf in FILES.items():
        rows = _rows(pf)
        sets = [synth_responses(rows)] + (hard_responses(rows, rounds)[0] if name == "ifbench" and rounds else [])
        for rs in sets:
            for row, r in zip(rows, rs):
                for cid, kw in zip(row["instruction_id_list"], row["kwargs"]):
                    out += [(cid, kw, v) for v in dict.fromkeys(loose_variants(r["response"])) if v.strip()]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5, help="near-boundary IFBench response sets (0: none)")
    ap.add_argument("--examples", type=int, default=10)
    a = ap.parse_args()
    from genlab.ifbench import nlp, registry

    work = triples(a.rounds)
    verdicts = {}
    for mode in ("real", "offline"):
        nlp.reset(mode)
        verdicts[mode] = [registry.check(c, t, kw).ok for c, kw, t in work]
    total: collections.Counter = collections.Counter()
    differ: collections.Counter = collections.Counter()
    examples = []
    for (cid, _, text), r, o in zip(work, verdicts["real"], verdicts["offline"]):
        total[cid] += 1
        if r != o:
            differ[cid] += 1
            if len(examples) < a.examples:
                examples.append({"id": cid, "real": r, "offline": o, "text": text[:160]})
    nlp.reset()
    print(json.dumps({"checks": len(work), "disagree": sum(differ.values()),
                      "per_id": {c: [differ[c], total[c]] for c in sorted(total) if differ[c]},
                      "examples": examples}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
