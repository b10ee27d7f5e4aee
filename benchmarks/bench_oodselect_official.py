"""genlab's OODSelect search against the official ``TestSetFinder`` on pools with a planted inverse subgroup.

    python benchmarks/bench_oodselect_official.py --official DIR [--pools 8] [--out F]

``DIR`` is the ``src`` folder of the official repository (olawalesalaudeen/OODSelect, HEAD 95b1323, exported with
``git archive HEAD src | tar -x -C /tmp/oodoff``); it needs ``pytorch-lightning`` (we used 2.6.6 beside torch
2.13.0 in a separate virtual environment) and nothing of it is committed here. The modules it imports only for its
plotting, tracking and HPO helpers (optuna, seaborn, wandb, pandas, its ``command_launchers``) are replaced by empty
stand-ins when missing; ``TestSetFinder`` itself, its losses and the Lightning ``Trainer`` run unchanged.

Each pool: M = 120 models, N = 400 OOD examples of which the first 40 are planted (P(correct) falls with the
model's ID accuracy; rises for the other 360), k = 40. Both searches see the same 60/20/20 model split
(``genlab.measures.oodselect.split_models``). Arms:

* ``official``: ``TestSetFinder`` with its constructor defaults (lr 0.01, eta_min 0.01, T_max 100, no size
  penalty), trained as ``TestSetFinder.tune_hparams`` trains it (3000 epochs, early stopping on the validation r
  with patience 500), selection = the parameters at the end of training (what ``tune_hparams`` records);
* ``official-best``: the same run's best validation checkpoint (``ModelCheckpoint``);
* ``genlab``: ``soft_select`` with ``run_oodselect``'s defaults (lr ∈ {0.03, 0.1, 0.3} × λ ∈ {0.1, 1, 10}, 1500
  steps, best validation checkpoint every 25 steps);
* ``genlab-official-hp``: ``soft_select`` with the official defaults (lr 0.01, eta_min 0.01, λ = 0, 3000 steps).

Printed per arm: planted examples among the 40 picked and r on the held-out test models (mean, min over pools).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from genlab.measures.oodselect import soft_select, split_models, subset_correlation

M, N, PLANTED, K = 120, 400, 40, 40


def planted_pool(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Correctness (M, N) and ID accuracy (M,): P(correct) = Φ(±Φ⁻¹(acc) + difficulty + noise), minus for the
    first PLANTED examples."""
    from scipy.stats import norm

    rng = np.random.default_rng(seed)
    acc = rng.uniform(0.55, 0.95, M)
    sign = np.where(np.arange(N) < PLANTED, -1.0, 1.0)
    logits = sign[None, :] * norm.ppf(acc)[:, None] + rng.normal(0, 0.5, N)[None, :] + rng.normal(0, 0.3, (M, N))
    return (rng.random((M, N)) < norm.cdf(logits)).astype(np.float32), acc


def import_official(src: Path):
    from importlib.machinery import ModuleSpec

    for name in ("optuna", "seaborn", "wandb", "command_launchers", "pandas"):
        try:
            __import__(name)
        except ImportError:
            stub = sys.modules[name] = types.ModuleType(name)
            stub.__spec__ = ModuleSpec(name, None)
    sys.path.insert(0, str(src))
    import test_utils

    return test_utils


def run_official(tu, correct, acc, split, seed: int) -> tuple[np.ndarray, np.ndarray]:
    import pytorch_lightning as pl
    import torch
    from pytorch_lightning.callbacks import EarlyStopping, ModelCheckpoint
    from torch.utils.data import DataLoader, TensorDataset

    pl.seed_everything(seed, verbose=False)

    def loader(idx, shuffle):
        ds = TensorDataset(torch.tensor(correct[idx]), torch.tensor(acc[idx], dtype=torch.float32))
        return DataLoader(ds, batch_size=len(idx), shuffle=shuffle)

    model = tu.TestSetFinder(num_samples=N, num_OOD_samples=K, loss_type="r")
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = ModelCheckpoint(monitor="val_correlation", mode="min", save_top_k=1, save_weights_only=True,
                               dirpath=tmp)
        trainer = pl.Trainer(max_epochs=3000, callbacks=[EarlyStopping(monitor="val_correlation", patience=500,
                                                                       mode="min"), ckpt],
                             enable_progress_bar=False, logger=False, enable_model_summary=False,
                             default_root_dir=tmp, num_sanity_val_steps=0)
        trainer.fit(model, loader(split.train, True), loader(split.val, False))
        last = model.selection.detach().numpy().copy()
        best = torch.load(ckpt.best_model_path, weights_only=True)["state_dict"]["selection"].numpy()
    return np.argsort(-last)[:K], np.argsort(-best)[:K]


def score(idx, correct, acc, split) -> tuple[int, float]:
    r = float(subset_correlation(correct[split.test], acc[split.test], [np.sort(idx)])[0])
    return int((np.asarray(idx) < PLANTED).sum()), r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--official", type=Path, required=True)
    ap.add_argument("--pools", type=int, default=8)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    tu = import_official(args.official)
    import torch

    torch.set_num_threads(1)
    rows: dict[str, list[tuple[int, float]]] = {}
    for seed in range(args.pools):
        correct, acc = planted_pool(seed)
        split = split_models(M, (0.6, 0.2, 0.2), seed=seed)
        tr, va = split.train, split.val
        last, best = run_official(tu, correct, acc, split, seed)
        arms = {"official": last, "official-best": best}
        arms["genlab"] = soft_select(correct[tr], acc[tr], [K], correct[va], acc[va], lrs=(0.03, 0.1, 0.3),
                                     lams=(0.1, 1.0, 10.0), seed=seed)[0].indices
        arms["genlab-official-hp"] = soft_select(correct[tr], acc[tr], [K], correct[va], acc[va], lrs=(0.01,),
                                                 lams=(0.0,), eta_min=0.01, steps=3000, seed=seed)[0].indices
        for name, idx in arms.items():
            rows.setdefault(name, []).append(score(idx, correct, acc, split))
        print(f"pool {seed}: " + ", ".join(f"{k} {v[-1][0]}/{PLANTED} r={v[-1][1]:+.2f}" for k, v in rows.items()),
              flush=True)
    summary = {}
    for name, v in rows.items():
        a = np.array(v)
        summary[name] = {"planted_mean": float(a[:, 0].mean()), "planted_min": int(a[:, 0].min()),
                         "test_r_mean": float(a[:, 1].mean()), "test_r_max": float(a[:, 1].max())}
        print(f"{name:20s} planted {a[:, 0].mean():5.1f}/{PLANTED} (min {a[:, 0].min():.0f})   held-out r "
              f"{a[:, 1].mean():+.3f} (worst {a[:, 1].max():+.3f})")
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
