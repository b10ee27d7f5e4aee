"""Tiny studies for harness tests. Importable by worker processes (tests put this folder on PYTHONPATH)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from genlab.harness import Claim, Paper, Study, decide, register


@register
class ToyMean(Study):
    """Estimates the mean of N(mu, 1) from n draws; the claim is that the estimate is within 4/sqrt(n)."""

    name = "toy-mean"
    paper = Paper("A toy paper", "arXiv:0000.00000")

    @dataclass
    class Config:
        n: int = 1000
        mu: float = 0.5
        label: str = "x"
        sizes: tuple[int, ...] = (10, 100)
        fail: bool = False
        tolerance: float = 4.0

        def validate(self) -> None:
            if self.n < 1:
                raise ValueError("n must be >= 1")

    presets = {"smoke": {"n": 50}, "quick": {}, "full": {"n": 100_000}}
    claims = [
        Claim(
            "mean-close",
            "the sample mean is within {tolerance}/sqrt(n) of mu",
            lambda m, cfg: decide.exact(
                cfg.tolerance / np.sqrt(cfg.n) - abs(m["mean"] - cfg.mu), above=0.0, err=abs(m["mean"] - cfg.mu)
            ),
        ),
        Claim("mean-negative", "the estimate is negative", lambda m, cfg: decide.exact(m["mean"], below=0.0)),
    ]

    def run(self, cfg, ctx):
        if cfg.fail:
            raise RuntimeError("asked to fail")
        x = ctx.rng("data").normal(cfg.mu, 1.0, cfg.n)
        for i in range(3):
            ctx.record(step=i, partial=float(x[: (i + 1) * cfg.n // 3].mean()))
        if os.environ.get("TOY_SLEEP"):  # lets a test kill a run mid-way without changing its config hash
            Path(os.environ["TOY_STARTED"]).write_text("started")
            Path(f"{os.environ['TOY_STARTED']}.{os.getpid()}").write_text("pid")  # lets a test watch the process
            time.sleep(float(os.environ["TOY_SLEEP"]))
        return {"mean": float(x.mean()), "mu": cfg.mu, "n": cfg.n, "nested": {"sd": float(x.std())}}

    def figures(self, metrics, ctx):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(3, 2))
        ax.bar(["mean"], [metrics["mean"]])
        return [ctx.save_figure(fig, "mean", caption="the sample mean", dpi=50)]
