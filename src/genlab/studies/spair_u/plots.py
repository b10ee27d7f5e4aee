"""Figures of the spair-u-keypoints study (kept apart so the study module stays about the science)."""

from __future__ import annotations

from typing import Any

import numpy as np

ARM_LABELS = {"raw": "raw features (NN)", "supervised": "supervised head", "3d": "head + 3D prototype"}
ARM_COLORS = {"raw": "#9e9e9e", "supervised": "#1f77b4", "3d": "#d62728"}


def _bars(ax: Any, metrics: dict[str, Any], groups: list[tuple[str, str]], title: str) -> None:
    """Grouped bars: one group per (label, key suffix), one bar per arm, mean ± s.e. over seeds."""
    width = 0.26
    x = np.arange(len(groups))
    for i, arm in enumerate(ARM_LABELS):
        stats = [metrics["summary"][f"{arm}/{suffix}"] for _, suffix in groups]
        means = [s["mean"] for s in stats]
        errs = [0.0 if not np.isfinite(s["se"]) else s["se"] for s in stats]
        ax.bar(x + (i - 1) * width, means, width, yerr=errs, capsize=3, color=ARM_COLORS[arm],
               label=ARM_LABELS[arm])
    ax.set_xticks(x, [g for g, _ in groups])
    ax.set_ylim(0, 1)
    ax.set_ylabel("PCK@0.1")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)


def plot_results(metrics: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cats = metrics["categories"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8), gridspec_kw={"width_ratios": [2, 2, len(cats)]})
    _bars(axes[0], metrics, [("seen keypoints", "seen/all"), ("unseen keypoints", "unseen/all")],
          "seen vs unseen keypoints")
    _bars(axes[1], metrics, [("unseen, same side", "unseen/same"), ("unseen, mirrored", "unseen/mirrored")],
          "unseen keypoints by view pair")
    _bars(axes[2], metrics, [(c, f"unseen/cat/{c}") for c in cats], "unseen keypoints per category")
    axes[0].legend(fontsize=8, loc="lower left")
    fig.suptitle(f"spair-u-keypoints (mechanism study): {metrics['seeds']} seeds, "
                 f"{metrics['test_pairs']} test pairs per seed", fontsize=10)
    fig.tight_layout()
    return fig
