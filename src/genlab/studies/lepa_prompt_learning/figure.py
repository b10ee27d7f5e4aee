"""The lepa-prompt-learning figure: HM over the weight sweep, the base/novel trade-off, levelled weights."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from genlab.harness import RunContext
from genlab.harness.decision import mean_se

OBJECTIVE_LABELS = ("CE", "text L1", "image L1", "KL")


def _sweep_panel(ax, metrics: Mapping[str, Any]) -> None:
    acc, scales = metrics["acc"], metrics["scales"]
    kinds = ["fixed", *metrics["rules_every_init"]]
    for k, kind in enumerate(kinds):
        ms = [mean_se(acc[f"{kind}@{s:g}"]["hm"])[:2] for s in scales]
        ax.errorbar(scales, [m for m, _ in ms], [e for _, e in ms], marker="os^v"[k % 4], capsize=2, label=kind)
    for k, (arm, style) in enumerate((("zero-shot", ":"), ("ce", "--"), ("coop", "-."))):
        ax.axhline(mean_se(acc[arm]["hm"])[0], ls=style, color=f"C{len(kinds) + k}", label=arm)
    pc = [a for a in acc if a.startswith("pcgrad@")]
    if pc:
        m, e, _ = mean_se(acc[pc[0]]["hm"])
        ax.errorbar([float(pc[0].split("@")[1])], [m], [e], marker="*", ms=11, color="k", ls="none", label=pc[0])
    ax.set(xscale="log", xlabel="consistency weight scale (fixed) / initial weight scale (levelling)", ylabel="HM")
    ax.set_title("base/novel harmonic mean, mean ± s.e. over seeds", fontsize=9)
    ax.legend(fontsize=7)


def _tradeoff_panel(ax, metrics: Mapping[str, Any]) -> None:
    acc = metrics["acc"]
    groups: dict[str, list[str]] = {}
    for arm in acc:
        groups.setdefault(arm.split("@")[0], []).append(arm)
    for k, (group, arms) in enumerate(groups.items()):
        base = [np.mean(acc[a]["base"]) for a in arms]
        novel = [np.mean(acc[a]["novel"]) for a in arms]
        ax.scatter(base, novel, s=30, marker="os^vD*P<>"[k % 9], color=f"C{k}", label=group)
    ax.set(xlabel="base accuracy (training style)", ylabel="novel accuracy (training style)")
    ax.set_title("the base/novel trade-off (seed means)", fontsize=9)
    ax.legend(fontsize=7)


def _weights_panel(ax, metrics: Mapping[str, Any]) -> None:
    traces, every = metrics["weights_seed0"], metrics.get("trace_every", 1) or 1
    ref = [a for a in traces if a.endswith(f"@{1.0:g}")] or list(traces)[:3]
    for k, arm in enumerate(ref):
        w = np.asarray(traces[arm])
        if w.size == 0:
            continue
        for j in range(w.shape[1]):
            ax.plot(
                every * np.arange(len(w)),
                np.maximum(w[:, j], 1e-6),
                color=f"C{j}",
                ls=("-", "--", ":", "-.")[k % 4],
                label=f"{arm}: {OBJECTIVE_LABELS[j]}",
            )
    ax.set(yscale="log", xlabel="prompt-learning step", ylabel="weight (sum = 4)")
    ax.set_title("levelled objective weights, seed 0 (line style = rule)", fontsize=9)
    ax.legend(fontsize=6, ncol=2)


def lepa_figure(metrics: Mapping[str, Any], ctx: RunContext) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(17, 4.6))
    _sweep_panel(ax[0], metrics)
    _tradeoff_panel(ax[1], metrics)
    _weights_panel(ax[2], metrics)
    fig.suptitle(f"lepa-prompt-learning — {metrics['label']} on a {metrics['backend']}", fontsize=10)
    fig.tight_layout()
    return ctx.save_figure(
        fig,
        "lepa-prompt-learning",
        caption="left: HM (training style) over the fixed-weight sweep and for each levelling rule started from "
        "the same weights; centre: base vs novel accuracy per arm; right: levelled weights of each rule at initial "
        "scale 1 (seed 0).",
    )
