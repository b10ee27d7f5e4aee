"""The forest plot of a study's claims: one row per empirical claim, its effect and 95 % CI against the margin.

Each row has its own x-axis (claims measure different things), the margin drawn as a line (a shaded band for an
equivalence claim) and the claimed side shaded green, so a reader sees at a glance which CIs clear their margin.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

from genlab.harness.claims import ERROR, INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict

COLOURS = {REPRODUCED: "#1a7f37", NOT_REPRODUCED: "#8250df", INCONCLUSIVE: "#9a6700", ERROR: "#cf222e"}


def forest_png(verdicts: Sequence[Verdict], dpi: int = 90) -> bytes | None:
    """A PNG of the forest plot of the verdicts that carry a test; None when none does."""
    rows = [v for v in verdicts if v.test is not None]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(rows), 1, figsize=(7.5, 0.62 * len(rows) + 0.5), squeeze=False)
    for ax, v in zip(axes[:, 0], rows, strict=True):
        _row(ax, v)
    fig.suptitle("claims: effect and 95 % CI against the margin (green: the claimed side)", fontsize=9, y=0.995)
    fig.tight_layout(h_pad=0.2)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return buf.getvalue()


def _row(ax, v: Verdict) -> None:
    t = v.test
    assert t is not None
    lo, hi = t.ci
    margins = list(t.margin) if isinstance(t.margin, tuple) else [t.margin]
    finite = [x for x in (lo, hi, t.effect, *margins) if math.isfinite(x)]
    left, right = (min(finite), max(finite)) if finite else (-1.0, 1.0)
    pad = (right - left) * 0.15 or max(abs(right), 1.0) * 0.1
    left, right = left - pad, right + pad
    if t.direction == "above":
        ax.axvspan(margins[0], right, color="#dafbe1", zorder=0)
    elif t.direction == "below":
        ax.axvspan(left, margins[0], color="#dafbe1", zorder=0)
    else:
        ax.axvspan(margins[0], margins[1], color="#dafbe1", zorder=0)
    for m in margins:
        ax.axvline(m, color="#57606a", lw=1, ls="--", zorder=1)
    colour = COLOURS.get(v.verdict, "#57606a")
    ax.plot([max(lo, left), min(hi, right)], [0, 0], color=colour, lw=2.5, zorder=2)
    for end, edge in ((lo, left), (hi, right)):
        if not math.isfinite(end):  # an unbounded CI: an arrow to the edge
            ax.annotate("", xy=(edge, 0), xytext=(edge - math.copysign(pad, end) * 0.5, 0),
                        arrowprops={"arrowstyle": "->", "color": colour})  # fmt: skip
    if math.isfinite(t.effect):
        ax.plot([t.effect], [0], "o", color=colour, ms=5, zorder=3)
    ax.set_xlim(left, right)
    ax.set_yticks([])
    ax.tick_params(axis="x", labelsize=7, pad=1)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.set_title(f"{v.key}  ·  {v.verdict}  ·  {t.method}, n={t.n}", fontsize=8, loc="left", pad=2, color=colour)
