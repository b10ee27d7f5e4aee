"""Record each study's typical smoke and quick wall time (what `genlab list` shows) from a finished run store.

    genlab reproduce --preset smoke --jobs 2 --root /tmp/times && genlab reproduce --jobs 2 --root /tmp/times
    python benchmarks/study_times.py /tmp/times

writes ``src/genlab/studies/typical_times.json``: per study, the median wall time of its finished runs of each
preset in that store (seconds, on the machine that ran them; say which in the commit message).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from genlab.harness.store import scan

OUT = Path(__file__).resolve().parents[1] / "src" / "genlab" / "studies" / "typical_times.json"


def main(root: str) -> None:
    runs, damaged = scan(Path(root))
    if damaged:
        print(f"warning: {len(damaged)} damaged run(s) left out", file=sys.stderr)
    walls: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        walls[run.study][run.preset].append(float(run.env.get("wall_time", 0.0)))
    table = {
        study: {preset: round(statistics.median(v), 1) for preset, v in sorted(by_preset.items())}
        for study, by_preset in sorted(walls.items())
        if {"smoke", "quick"} <= set(by_preset)
    }
    OUT.write_text(json.dumps(table, indent=1) + "\n")
    print(f"{len(table)} studies -> {OUT}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs")
