"""The summary figure of the ``prune-graph-ood`` study: accuracy per arm (ID vs OOD test), edge statistics of the
edge-based arms, and the OOD-validation accuracy over epochs."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

LABELS = {
    "erm": "ERM",
    "vrex": "V-REx",
    "gsat": "GSAT-style",
    "prune-paper": "PrunE paper",
    "prune-code": "PrunE code",
    "prune-no-size": "PrunE −L_e",
    "prune-no-align": "PrunE −L_s",
}


def _ms(values) -> tuple[float, float]:
    """Mean and standard error over seeds (0 for a single seed)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), 0.0
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else 0.0


def summary_figure(metrics: dict[str, Any], cfg: Any, records: list[dict]) -> tuple[Any, str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    splits, arms = list(cfg.splits), list(cfg.arms)
    fig, axes = plt.subplots(len(splits), 3, figsize=(15, 3.8 * len(splits)), squeeze=False)
    for row, split in enumerate(splits):
        _accuracy_panel(axes[row, 0], metrics, split, arms)
        _edge_panel(axes[row, 1], metrics, split, arms)
        _trace_panel(axes[row, 2], records, split, arms, cfg.selection)
    fig.tight_layout()
    caption = (
        "Per split (rows): ID- and OOD-test accuracy of each arm, checkpoint chosen on "
        f"{cfg.selection} (mean ± s.e. over {cfg.seeds} seeds); expected motif-edge recall and share of non-motif "
        "edges removed on the OOD test graphs; selection-split accuracy over epochs (mean over seeds)."
    )
    return fig, "prune-graph-ood", caption


def _accuracy_panel(ax, metrics, split, arms) -> None:
    x = np.arange(len(arms))
    for offset, (what, label) in zip((-0.2, 0.2), (("id_acc", "ID test"), ("ood_acc", "OOD test"))):
        stats = [_ms(metrics[f"{split}/{a}/{what}"]) for a in arms]
        ax.bar(x + offset, [s[0] for s in stats], 0.4, yerr=[s[1] for s in stats], label=label, capsize=2)
    ax.axhline(1 / 3, color="grey", lw=0.8, ls=":")
    ax.set_xticks(x, [LABELS.get(a, a) for a in arms], rotation=35, ha="right", fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    ax.set_title(f"{split}: test accuracy")
    ax.legend(fontsize=8)


def _edge_panel(ax, metrics, split, arms) -> None:
    edge_arms = [a for a in arms if a not in ("erm", "vrex")]
    x = np.arange(len(edge_arms))
    for offset, (what, label) in zip((-0.2, 0.2), (("ood_recall", "motif-edge recall"),
                                                    ("ood_spurious_removed", "non-motif edges removed"))):
        stats = [_ms(metrics[f"{split}/{a}/{what}"]) for a in edge_arms]
        ax.bar(x + offset, [s[0] for s in stats], 0.4, yerr=[s[1] for s in stats], label=label, capsize=2)
    ax.set_xticks(x, [LABELS.get(a, a) for a in edge_arms], rotation=35, ha="right", fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_title(f"{split}: edges on OOD test graphs")
    ax.legend(fontsize=8)


def _trace_panel(ax, records, split, arms, selection) -> None:
    curves: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.get("split") == split and f"{selection}_acc" in r:
            curves[r["arm"]][r["epoch"]].append(r[f"{selection}_acc"])
    for arm in arms:
        if arm in curves:
            epochs = sorted(curves[arm])
            ax.plot(epochs, [np.mean(curves[arm][e]) for e in epochs], label=LABELS.get(arm, arm), lw=1.2)
    ax.set_xlabel("epoch")
    ax.set_ylabel(f"{selection} accuracy")
    ax.set_title(f"{split}: validation accuracy")
    ax.legend(fontsize=7)
