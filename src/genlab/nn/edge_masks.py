"""Edge masks and their regularisers for graph OOD methods that act on edges.

* :func:`straight_through_gumbel` — a hard 0/1 mask sampled from per-edge (drop, keep) logits; its backward pass is
  that of the relaxed Gumbel-softmax sample (straight-through), as in PrunE (tau = 0.2, hard = True).
* PrunE's two regularisers in two forms:

  - the **paper** form: graph-size constraint L_e = mean over graphs of (kept fraction − η)², and ε-probability
    alignment L_s = mean over graphs of the mean |p − ε| over that graph's K % lowest keep probabilities,
    ε = 1/|E_G|;
  - the **code** form (official repository): an asymmetric L1 hinge on the kept fraction of the whole batch,
    4·(r − η) above η and (η − r) below; and 0.5·Σ|p − 1/k| over the k = ⌊K %·|E_batch|⌋ lowest keep
    probabilities of the batch (a total-variation distance to uniform; 0 when k = 0).

* :func:`concrete_sample` and :func:`bernoulli_kl` — GSAT's relaxed Bernoulli attention and its information
  bottleneck KL(Bern(a) ‖ Bern(r)).

Edge counts are directed counts, as PyG stores an undirected edge twice.
"""

from __future__ import annotations

import torch
from torch import Tensor


def straight_through_gumbel(logits: Tensor, tau: float, generator: torch.Generator | None = None) -> Tensor:
    """Hard (..., E) keep mask from (..., E, 2) logits (last column = keep): forward exactly 0/1, a draw with
    probability softmax(logits)[..., 1]; backward through the tau-relaxed sample."""
    # -log U ~ Exp(1), so -log(Exp) is Gumbel; drawn on the CPU generator, so a seed means the same noise anywhere
    u = torch.empty(logits.shape, dtype=logits.dtype).exponential_(generator=generator).to(logits.device)
    soft = torch.softmax((logits - u.log()) / tau, dim=-1)
    hard = torch.nn.functional.one_hot(soft.argmax(-1), logits.shape[-1]).to(soft.dtype)
    return (hard - soft.detach() + soft)[..., 1]


def keep_probability(logits: Tensor) -> Tensor:
    """p_e = softmax(logits_e)[keep]."""
    return torch.softmax(logits, dim=-1)[..., 1]


def _per_graph_mean(values: Tensor, edge_graph: Tensor, n_graphs: int) -> Tensor:
    total = torch.zeros(n_graphs, dtype=values.dtype, device=values.device).index_add_(0, edge_graph, values)
    count = torch.zeros(n_graphs, dtype=values.dtype, device=values.device).index_add_(
        0, edge_graph, torch.ones_like(values)
    )
    return total / count.clamp_min(1)


# ---------------------------------------------------------------------------------------------------------------
# PrunE: paper form
# ---------------------------------------------------------------------------------------------------------------
def size_loss_paper(mask: Tensor, edge_graph: Tensor, n_graphs: int, eta: float) -> Tensor:
    """E_G[(sum_{e in G} mask_e / |E_G| − η)²] over the graphs that have edges."""
    frac = _per_graph_mean(mask, edge_graph, n_graphs)
    has_edges = torch.bincount(edge_graph, minlength=n_graphs) > 0
    return ((frac - eta) ** 2)[has_edges].mean()


def lowest_k_per_graph(p: Tensor, edge_graph: Tensor, n_graphs: int, k_percent: float) -> Tensor:
    """Bool (E,): the ⌊K %·|E_G|⌋ lowest values of ``p`` within each graph (ties broken by order). Vectorized: two
    stable sorts (by p, then by graph)."""
    counts = torch.bincount(edge_graph, minlength=n_graphs)
    order = torch.argsort(p.detach(), stable=True)
    order = order[torch.argsort(edge_graph[order], stable=True)]  # by graph, then by p within a graph
    start = torch.cumsum(counts, 0) - counts
    rank = torch.empty_like(edge_graph)
    rank[order] = torch.arange(len(p), device=p.device) - start[edge_graph[order]]
    k = torch.floor(counts.to(p.dtype) * k_percent / 100.0).long()
    return rank < k[edge_graph]


def alignment_loss_paper(p: Tensor, edge_graph: Tensor, n_graphs: int, k_percent: float) -> Tensor:
    """E_G[(1/|E_s|) sum_{e in E_s} |p_e − ε|], E_s = the graph's K % lowest keep probabilities, ε = 1/|E_G|;
    graphs with an empty E_s do not count."""
    sel = lowest_k_per_graph(p, edge_graph, n_graphs, k_percent)
    counts = torch.bincount(edge_graph, minlength=n_graphs).to(p.dtype)
    eps = 1.0 / counts.clamp_min(1)[edge_graph]
    dev = torch.where(sel, (p - eps).abs(), torch.zeros_like(p))
    n_sel = torch.zeros(n_graphs, dtype=p.dtype, device=p.device).index_add_(0, edge_graph, sel.to(p.dtype))
    per_graph = torch.zeros(n_graphs, dtype=p.dtype, device=p.device).index_add_(0, edge_graph, dev)
    valid = n_sel > 0
    if not bool(valid.any()):
        return p.sum() * 0.0
    return (per_graph[valid] / n_sel[valid]).mean()


# ---------------------------------------------------------------------------------------------------------------
# PrunE: code form
# ---------------------------------------------------------------------------------------------------------------
def size_loss_code(mask: Tensor, eta: float, high: float = 4.0, low: float = 1.0) -> Tensor:
    """Asymmetric L1 hinge on the batch's kept fraction r: high·(r − η) if r ≥ η else low·(η − r)."""
    return size_hinge(mask.mean(), eta, high, low)


def size_hinge(r: Tensor, eta: float, high: float = 4.0, low: float = 1.0) -> Tensor:
    """The code form's hinge on kept fraction(s) r (any shape): high·(r − η) if r ≥ η else low·(η − r)."""
    return torch.where(r >= eta, high * (r - eta), low * (eta - r))


def size_loss_code_rows(mask: Tensor, n_edges: Tensor, eta: float, high: float = 4.0, low: float = 1.0) -> Tensor:
    """:func:`size_loss_code` of each row's first ``n_edges[k]`` entries of ``mask`` (K, E) at once: (K,)."""
    real = torch.arange(mask.shape[1], device=mask.device) < n_edges.view(-1, 1)
    return size_hinge((mask * real).sum(1) / n_edges.to(mask.dtype), eta, high, low)


def alignment_loss_code(p: Tensor, k_percent: float) -> Tensor:
    """0.5·sum |p − 1/k| over the batch's k = ⌊K %·|E|⌋ lowest keep probabilities; 0 when k = 0 (the official
    code divides by zero there)."""
    k = int(len(p) * k_percent / 100.0)
    if k == 0:
        return p.sum() * 0.0
    lowest = torch.sort(p).values[:k]
    return 0.5 * (lowest - 1.0 / k).abs().sum()


def alignment_loss_code_rows(p: Tensor, n_edges: Tensor, k_percent: float) -> Tensor:
    """:func:`alignment_loss_code` of each row's first ``n_edges[k]`` entries of ``p`` (K, E) at once: (K,). One
    sort of the rows with the padding entries set to +inf (so they sort last), k = ⌊K %·n_edges⌋ per row."""
    width = p.shape[1]
    real = torch.arange(width, device=p.device) < n_edges.view(-1, 1)
    k = (n_edges.double() * k_percent / 100.0).long()  # as int(len(p) * k_percent / 100.0), in float64
    lowest = torch.sort(torch.where(real, p, torch.full_like(p, float("inf"))), dim=1).values[:, : int(k.max())]
    chosen = torch.arange(lowest.shape[1], device=p.device) < k.view(-1, 1)
    target = 1.0 / k.clamp_min(1).to(p.dtype).view(-1, 1)
    dev = torch.where(chosen, (lowest - target).abs(), torch.zeros_like(lowest))
    return 0.5 * dev.sum(1)


# ---------------------------------------------------------------------------------------------------------------
# GSAT
# ---------------------------------------------------------------------------------------------------------------
def concrete_sample(logits: Tensor, temperature: float = 1.0, generator: torch.Generator | None = None) -> Tensor:
    """Relaxed Bernoulli sample sigmoid((logit + log u − log(1 − u)) / temperature), u ~ U(0, 1)."""
    u = torch.rand(logits.shape, generator=generator, dtype=logits.dtype).clamp(1e-10, 1 - 1e-10).to(logits.device)
    return torch.sigmoid((logits + u.log() - (1 - u).log()) / temperature)


def bernoulli_kl(att: Tensor, r: float, eps: float = 1e-6) -> Tensor:
    """Mean over edges of KL(Bern(att) ‖ Bern(r)) — GSAT's information bottleneck towards keep rate r."""
    return bernoulli_kl_terms(att, r, eps).mean()


def bernoulli_kl_terms(att: Tensor, r: float, eps: float = 1e-6) -> Tensor:
    """KL(Bern(att) ‖ Bern(r)) per entry (GSAT's form, with its eps), unreduced."""
    return att * torch.log(att / r + eps) + (1 - att) * torch.log((1 - att) / (1 - r + eps) + eps)


def gsat_r(epoch: int, decay_every: int, init_r: float = 0.9, final_r: float = 0.5, step: float = 0.1) -> float:
    """GSAT's schedule of r: from init_r down by ``step`` every ``decay_every`` epochs, floored at final_r."""
    return max(final_r, init_r - (epoch // max(1, decay_every)) * step)
