"""K seed-copies of the small graph networks of :mod:`genlab.nn.graph`, trained as one model.

Every weight has a leading seed dimension; seed k's copy reads only seed k's graphs. The K graph batches are laid
out *padded*: nodes as (K, N, ·) with N ≥ 1 + the largest batch (the last node of every seed is a padding node that
belongs to no graph), directed edges as (K, E, ·); padding edges run from that padding node to itself, so they never
touch a real node. Linear layers are batched matrix products over the seed dimension, message passing is one sparse
(CSR) matrix product over the flattened (K·N) nodes (:class:`_Aggregate`; the edge orders it needs are sorted once
per batch), and batch norm takes its statistics over each seed's real nodes only.
The copies are independent models: the gradient of the summed per-seed losses with respect to seed k's weights is
the gradient of seed k's loss, and Adam acts elementwise, so one optimiser over the stacked weights is K optimisers.

Modules mirror :class:`genlab.nn.graph.GraphClassifier` / :class:`~genlab.nn.graph.EdgeScorer` attribute by
attribute, so :func:`load_seed` copies a plain model into one seed slot (tests compare the two).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn


@dataclass
class SeedBatch:
    """One training step's (or one evaluation split's) graphs for K seeds, padded (see the module docstring)."""

    edge_index: Tensor  # (2, K*E) flat node ids into the K*N nodes (seed k's nodes are k*N ... k*N + N - 1)
    node_mask: Tensor  # (K, N, 1) bool: a real node
    node_slot: Tensor  # (K*N,) flat graph slot in K*(G+1); padding nodes go to their seed's slot G
    graph_mask: Tensor  # (K, G) bool: a real graph
    y: Tensor  # (K, G) labels (0 at padding)
    env: Tensor  # (K, G) training environments
    edge_mask: Tensor  # (K, E) bool: a real edge (real edges come first)
    edge_graph: Tensor  # (K, E) graph of each edge, local to its seed
    edge_gt: Tensor  # (K, E) bool: a motif edge
    edge_rev: Tensor  # (K*E,) flat index of each directed edge's reverse (padding edges: themselves)
    by_dst: tuple[Tensor, Tensor, Tensor]  # CSR of the aggregation (row = target): row pointers, sources, edge order
    by_src: tuple[Tensor, Tensor, Tensor]  # ... of its transpose (row = source): row pointers, targets, edge order
    n_edges: np.ndarray  # (K,) real edges per seed
    n_graphs: np.ndarray  # (K,) real graphs per seed

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(K seeds, N node slots, G graph slots, E edge slots)."""
        k, n, _ = self.node_mask.shape
        return k, n, self.graph_mask.shape[1], self.edge_mask.shape[1]


class PaddedBatches:
    """B graph batches for each of K seeds, padded once to common sizes; :meth:`step` gathers one batch per seed
    (seed k's batch ``idx[k]``) without a Python loop over seeds."""

    def __init__(self, sets: list, batches: list[list[np.ndarray]]) -> None:
        """``sets[k]``: seed k's :class:`genlab.data.motif_graphs.GraphSet`; ``batches[k][b]``: the graph ids of its
        batch b (every seed has the same number of batches)."""
        k_seeds, n_b = len(sets), len(batches[0])
        if any(len(b) != n_b for b in batches):
            raise ValueError("every seed needs the same number of batches")
        n_nodes = [[int(gs.num_nodes[ids].sum()) for ids in bs] for gs, bs in zip(sets, batches)]
        n_edges = [[int(gs.num_edges[ids].sum()) for ids in bs] for gs, bs in zip(sets, batches)]
        n = max(max(r) for r in n_nodes) + 1  # + the padding node
        e = max(1, max(max(r) for r in n_edges))
        g = max(len(ids) for bs in batches for ids in bs)
        shape = (k_seeds, n_b)
        self.src = np.full((*shape, e), n - 1, dtype=np.int64)
        self.dst = np.full((*shape, e), n - 1, dtype=np.int64)
        self.edge_graph = np.zeros((*shape, e), dtype=np.int64)
        self.edge_gt = np.zeros((*shape, e), dtype=bool)
        self.edge_rev = np.broadcast_to(np.arange(e, dtype=np.int64), (*shape, e)).copy()
        self.order_dst, self.order_src = self.edge_rev.copy(), self.edge_rev.copy()  # real edges sorted, then padding
        self.node_slot = np.full((*shape, n), g, dtype=np.int64)
        self.y = np.zeros((*shape, g), dtype=np.int64)
        self.env = np.zeros((*shape, g), dtype=np.int64)
        self.n_edges = np.array(n_edges, dtype=np.int64)
        self.n_nodes = np.array(n_nodes, dtype=np.int64)
        self.n_graphs = np.array([[len(ids) for ids in bs] for bs in batches], dtype=np.int64)
        for k, (gs, bs) in enumerate(zip(sets, batches)):
            for b, ids in enumerate(bs):
                self._fill(k, b, gs, np.asarray(ids, dtype=np.int64))
        self.shape, self.shape_b = (k_seeds, n, g, e), n_b

    def _fill(self, k: int, b: int, gs, ids: np.ndarray) -> None:
        nn_g, ne_g = gs.num_nodes[ids], gs.num_edges[ids]
        node_off = np.concatenate([[0], np.cumsum(nn_g)[:-1]])
        edges = np.concatenate([np.arange(gs.edge_ptr[i], gs.edge_ptr[i + 1]) for i in ids]).astype(np.int64)
        local = np.repeat(node_off, ne_g)
        m, n_real = len(edges), int(nn_g.sum())
        self.src[k, b, :m] = gs.edge_index[0, edges] + local
        self.dst[k, b, :m] = gs.edge_index[1, edges] + local
        self.edge_graph[k, b, :m] = np.repeat(np.arange(len(ids)), ne_g)
        self.edge_gt[k, b, :m] = gs.edge_gt[edges]
        self.edge_rev[k, b, :m] = reverse_edges(self.src[k, b, :m], self.dst[k, b, :m])
        self.order_dst[k, b, :m] = np.lexsort((self.src[k, b, :m], self.dst[k, b, :m]))  # by target, then source
        self.order_src[k, b, :m] = np.lexsort((self.dst[k, b, :m], self.src[k, b, :m]))
        self.node_slot[k, b, :n_real] = np.repeat(np.arange(len(ids)), nn_g)
        self.y[k, b, : len(ids)] = gs.y[ids]
        self.env[k, b, : len(ids)] = gs.env[ids]

    def to_torch(self, device: str = "cpu") -> PaddedBatches:
        for name in ("src", "dst", "edge_graph", "edge_gt", "edge_rev", "order_dst", "order_src", "node_slot", "y",
                     "env"):
            setattr(self, name, torch.from_numpy(getattr(self, name)).to(device))
        return self

    def step(self, idx: np.ndarray) -> SeedBatch:
        """Seed k's batch ``idx[k]`` for every k, as one :class:`SeedBatch` (tensors from :meth:`to_torch`), trimmed
        to this step's largest batch (+ the padding node)."""
        ks = np.arange(self.shape[0])
        n_edges, n_nodes, n_graphs = self.n_edges[ks, idx], self.n_nodes[ks, idx], self.n_graphs[ks, idx]
        n, g, e = int(n_nodes.max()) + 1, int(n_graphs.max()), max(1, int(n_edges.max()))
        device = self.src.device
        kt, it = torch.from_numpy(ks).to(device), torch.from_numpy(np.asarray(idx, dtype=np.int64)).to(device)
        # padding edges and nodes point at the last node / graph slot of the trimmed sizes
        src = self.src[kt, it, :e].clamp(max=n - 1) + (kt * n).view(-1, 1)
        dst = self.dst[kt, it, :e].clamp(max=n - 1) + (kt * n).view(-1, 1)
        slot = self.node_slot[kt, it, :n].clamp(max=g) + (kt * (g + 1)).view(-1, 1)

        def below(count: np.ndarray, size: int) -> Tensor:
            return torch.arange(size, device=device) < torch.from_numpy(count).to(device).view(-1, 1)

        def csr(order: Tensor, rows: Tensor, cols: Tensor) -> tuple[Tensor, Tensor, Tensor]:
            # seeds own consecutive node ranges and, within a seed, padding edges (at the padding node, the seed's
            # last) sort after the real ones: the per-seed orders, offset, sort all K*E edges by ``rows``
            flat = (order[kt, it, :e] + (kt * e).view(-1, 1)).reshape(-1)
            counts = torch.bincount(rows.reshape(-1), minlength=len(ks) * n)
            ptr = torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])
            return ptr, cols.reshape(-1).index_select(0, flat), flat

        return SeedBatch(
            edge_index=torch.stack([src.reshape(-1), dst.reshape(-1)]), node_mask=below(n_nodes, n)[..., None],
            node_slot=slot.reshape(-1), graph_mask=below(n_graphs, g), y=self.y[kt, it, :g], env=self.env[kt, it, :g],
            edge_mask=below(n_edges, e), edge_graph=self.edge_graph[kt, it, :e], edge_gt=self.edge_gt[kt, it, :e],
            edge_rev=(self.edge_rev[kt, it, :e] + (kt * e).view(-1, 1)).reshape(-1),
            by_dst=csr(self.order_dst, dst, src), by_src=csr(self.order_src, src, dst), n_edges=n_edges,
            n_graphs=n_graphs,
        )


def reverse_edges(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """For every directed edge (u, v) the index of (v, u); every edge must be stored in both directions."""
    base = int(max(src.max(initial=0), dst.max(initial=0))) + 1
    key, want = src * base + dst, dst * base + src
    order = np.argsort(key, kind="stable")
    pos = np.minimum(np.searchsorted(key[order], want), len(key) - 1)
    if len(key) and np.any(key[order[pos]] != want):
        raise ValueError("an edge without its reverse")
    return order[pos]


# ---------------------------------------------------------------------------------------------------------------
# layers
# ---------------------------------------------------------------------------------------------------------------
class SeedLinear(nn.Module):
    """K independent ``nn.Linear`` layers (same initialisation law): (K, M, d_in) -> (K, M, d_out)."""

    def __init__(self, k: int, d_in: int, d_out: int) -> None:
        super().__init__()
        bound = 1.0 / math.sqrt(d_in)  # nn.Linear's default: U(-1/sqrt(d_in), 1/sqrt(d_in)) for weight and bias
        self.weight = nn.Parameter(torch.empty(k, d_out, d_in).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(k, d_out).uniform_(-bound, bound))

    def forward(self, x: Tensor) -> Tensor:
        return torch.baddbmm(self.bias.unsqueeze(1), x, self.weight.transpose(1, 2))


class SeedBatchNorm(nn.Module):
    """K independent ``nn.BatchNorm1d`` over (K, M, d) with statistics over the rows where ``mask`` (K, M, 1) is
    true; running statistics (momentum 0.1, unbiased variance) as torch keeps them. ``relu=True`` applies a ReLU to
    the output in the same step (training: one fused forward and a hand-written backward, :class:`_MaskedNormReLU`,
    about half the memory passes of autograd's; tested against autograd)."""

    def __init__(self, k: int, d: int, eps: float = 1e-5, momentum: float = 0.1) -> None:
        super().__init__()
        self.eps, self.momentum = eps, momentum
        self.weight = nn.Parameter(torch.ones(k, d))
        self.bias = nn.Parameter(torch.zeros(k, d))
        self.register_buffer("running_mean", torch.zeros(k, d))
        self.register_buffer("running_var", torch.ones(k, d))

    def forward(self, x: Tensor, mask: Tensor, relu: bool = False) -> Tensor:
        if self.training:
            m = mask.to(x.dtype)
            out, mean, var, count = _MaskedNormReLU.apply(x, m, self.weight, self.bias, self.eps, relu)
            with torch.no_grad():
                unbiased = var * count / (count - 1).clamp_min(1)
                self.running_mean.lerp_(mean[:, 0], self.momentum)
                self.running_var.lerp_(unbiased[:, 0], self.momentum)
            return out
        scale = self.weight * torch.rsqrt(self.running_var + self.eps)
        out = torch.addcmul((self.bias - self.running_mean * scale).unsqueeze(1), x, scale.unsqueeze(1))
        return torch.relu(out) if relu else out


class _MaskedNormReLU(torch.autograd.Function):
    """Masked batch normalisation (statistics over the rows with m = 1, biased variance), optionally followed by a
    ReLU. With x̂ = (x − μ)/σ, y = w·x̂ + b and g = ∂L/∂y (zeroed where the ReLU is off), the backward pass is
    ∂L/∂w = Σ_rows g·x̂, ∂L/∂b = Σ_rows g and ∂L/∂x = (w/σ)·(g − m/n·(∂L/∂b + x̂·∂L/∂w)), n = Σ m: every row sees the
    statistics, only the real rows move them."""

    @staticmethod
    def forward(ctx, x, m, weight, bias, eps: float, relu: bool):  # type: ignore[override]
        mt = m.transpose(1, 2)  # masked sums as (K, 1, M) @ (K, M, d) products
        count = mt.sum(2, keepdim=True)  # (K, 1, 1)
        mean = torch.bmm(mt, x) / count
        xc = x - mean
        var = torch.bmm(mt, xc * xc) / count
        invstd = torch.rsqrt(var + eps)
        scale = weight.unsqueeze(1) * invstd
        out = torch.addcmul(bias.unsqueeze(1), xc, scale)
        if relu:
            out.clamp_min_(0)
        ctx.relu = relu
        ctx.save_for_backward(xc, m, invstd, scale, count, out)
        ctx.mark_non_differentiable(mean, var, count)
        return out, mean, var, count

    @staticmethod
    def backward(ctx, g, *_):  # type: ignore[override]
        xc, m, invstd, scale, count, out = ctx.saved_tensors
        if ctx.relu:
            g = torch.ops.aten.threshold_backward(g, out, 0)  # ReLU's own backward (a where() is 10x slower)
        g_b = g.sum(1, keepdim=True)  # (K, 1, d)
        g_w = (g * xc).sum(1, keepdim=True) * invstd
        t = torch.addcmul(g_b, xc, invstd * g_w)  # ∂L/∂b + x̂·∂L/∂w
        g_x = torch.addcmul(g, t, m / -count) * scale
        return g_x, None, g_w[:, 0], g_b[:, 0], None, None


class SeedMLP(nn.Module):
    """Linear -> BatchNorm -> ReLU -> Linear (the GIN MLP of :func:`genlab.nn.graph._mlp`), K copies."""

    def __init__(self, k: int, d_in: int, d_hidden: int, d_out: int) -> None:
        super().__init__()
        self.lin1, self.norm, self.lin2 = SeedLinear(k, d_in, d_hidden), SeedBatchNorm(k, d_hidden), \
            SeedLinear(k, d_hidden, d_out)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        return self.lin2(self.norm(self.lin1(x), mask, relu=True))


class SeedGINConv(nn.Module):
    """h_i' = MLP((1 + eps) h_i + sum_{j -> i} w_ji h_j), K copies (eps trainable, starting at 0)."""

    def __init__(self, k: int, d_in: int, d_out: int, hidden: int) -> None:
        super().__init__()
        self.nn = SeedMLP(k, d_in, hidden, d_out)
        self.eps = nn.Parameter(torch.zeros(k))

    def forward(self, x: Tensor, b: SeedBatch, edge_weight: Tensor | None = None) -> Tensor:
        k, n, d = x.shape
        w = None if edge_weight is None else edge_weight.reshape(-1)
        agg = _Aggregate.apply(x.reshape(k * n, d), w, b).view(k, n, d)
        return self.nn(torch.addcmul(agg, x, (1 + self.eps).view(k, 1, 1)), b.node_mask)


class _Aggregate(torch.autograd.Function):
    """sum_{j -> i} w_ji h_j for every node i (w = 1 without weights) as the CSR product A·h, A[i, j] = w_ji; the
    backward pass is Aᵀ·g for h and <g_i, h_j> for w_ji (a sampled dense product on A's pattern). The same sums as
    gathering the messages and ``index_add_``-ing them (tested), without materialising the (K·E, d) messages: about
    a third of the time."""

    @staticmethod
    def forward(ctx, h, w, b: SeedBatch):  # type: ignore[override]
        ctx.b = b
        ctx.save_for_backward(h, w)
        return _csr(b.by_dst, w, h.shape[0], h.dtype) @ h

    @staticmethod
    def backward(ctx, g):  # type: ignore[override]
        h, w = ctx.saved_tensors
        b = ctx.b
        g_h = _csr(b.by_src, w, h.shape[0], h.dtype) @ g if ctx.needs_input_grad[0] else None
        g_w = None
        if w is not None and ctx.needs_input_grad[1]:  # <g_i, h_j> on A's pattern (CSR order), back to edge order
            pattern = _csr(b.by_dst, w.detach(), h.shape[0], h.dtype)
            values = torch.sparse.sampled_addmm(pattern, g, h.t(), beta=0.0).values()
            g_w = torch.empty_like(values).index_copy_(0, b.by_dst[2], values)
        return g_h, g_w, None


def _csr(structure: tuple[Tensor, Tensor, Tensor], w: Tensor | None, n: int, dtype: torch.dtype) -> Tensor:
    ptr, cols, order = structure
    values = torch.ones(len(cols), dtype=dtype, device=cols.device) if w is None else w.index_select(0, order)
    with warnings.catch_warnings():  # "sparse CSR support is in beta": the product and its transpose are tested
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(ptr, cols, values, (n, n), check_invariants=False)


class SeedGIN(nn.Module):
    """``layers`` GIN convolutions, each followed by batch norm and ReLU (:class:`genlab.nn.graph.GIN`)."""

    def __init__(self, k: int, d_in: int, hidden: int, layers: int) -> None:
        super().__init__()
        dims = [d_in] + [hidden] * layers
        self.convs = nn.ModuleList(SeedGINConv(k, a, c, hidden) for a, c in zip(dims[:-1], dims[1:]))
        self.norms = nn.ModuleList(SeedBatchNorm(k, hidden) for _ in range(layers))

    def forward(self, b: SeedBatch, edge_weight: Tensor | None = None) -> Tensor:
        k, n, _ = b.node_mask.shape
        x = torch.ones(k, n, self.convs[0].nn.lin1.weight.shape[-1], device=b.node_mask.device)  # all-ones features
        for conv, norm in zip(self.convs, self.norms):
            x = norm(conv(x, b, edge_weight), b.node_mask, relu=True)
        return x


class SeedHead(nn.Module):
    """Linear -> ReLU -> Linear, K copies (the classifier head, the edge MLPs)."""

    def __init__(self, k: int, dims: list[int]) -> None:
        super().__init__()
        self.layers = nn.ModuleList(SeedLinear(k, a, c) for a, c in zip(dims[:-1], dims[1:]))

    def forward(self, x: Tensor) -> Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x) if i == 0 else layer(torch.relu(x))
        return x


class SeedGraphClassifier(nn.Module):
    """GIN -> sum pooling per graph -> 2-layer head: (K, G, classes) logits."""

    def __init__(self, k: int, hidden: int, layers: int, n_classes: int) -> None:
        super().__init__()
        self.gnn = SeedGIN(k, 1, hidden, layers)
        self.head = SeedHead(k, [hidden, hidden, n_classes])

    def pool(self, h: Tensor, b: SeedBatch) -> Tensor:
        k, n, d = h.shape
        g = b.graph_mask.shape[1]
        out = torch.zeros(k * (g + 1), d, dtype=h.dtype, device=h.device)
        return out.index_add_(0, b.node_slot, h.reshape(k * n, d)).view(k, g + 1, d)[:, :g]

    def forward(self, b: SeedBatch, edge_weight: Tensor | None = None) -> Tensor:
        return self.head(self.pool(self.gnn(b, edge_weight), b))


def endpoint_pairs(h: Tensor, b: SeedBatch) -> tuple[Tensor, Tensor]:
    """(h_i, h_j) of every directed edge, each (K, E, d)."""
    k, n, d = h.shape
    flat = h.reshape(k * n, d)
    return flat.index_select(0, b.edge_index[0]).view(k, -1, d), flat.index_select(0, b.edge_index[1]).view(k, -1, d)



class SeedEdgeScorer(nn.Module):
    """Per-edge logits from an MLP of h_i + h_j (:class:`genlab.nn.graph.EdgeScorer`): (K, E, out)."""

    def __init__(self, k: int, hidden: int, layers: int, out: int) -> None:
        super().__init__()
        self.gnn = SeedGIN(k, 1, hidden, layers)
        self.mlp = SeedHead(k, [hidden, 2 * hidden, out])

    def forward(self, b: SeedBatch) -> Tensor:
        hi, hj = endpoint_pairs(self.gnn(b), b)
        return self.mlp(hi + hj)


# ---------------------------------------------------------------------------------------------------------------
# one seed in and out
# ---------------------------------------------------------------------------------------------------------------
def _seed_name(plain: str) -> str:
    """The seed module's state key for a key of :class:`genlab.nn.graph.GraphClassifier` / ``EdgeScorer``."""
    parts = plain.split(".")
    if parts[:2] == ["gnn", "convs"] and parts[3] == "nn":
        parts[4] = {"0": "lin1", "1": "norm", "3": "lin2"}[parts[4]]
    elif parts[0] in ("head", "mlp"):
        parts[1:2] = ["layers", {"0": "0", "2": "1"}[parts[1]]]
    return ".".join(parts)


def load_seed(seed_module: nn.Module, k: int, plain: nn.Module) -> None:
    """Copy a plain :class:`genlab.nn.graph.GraphClassifier` or ``EdgeScorer`` into seed slot ``k``."""
    state = seed_module.state_dict()
    with torch.no_grad():
        for key, value in plain.state_dict().items():
            if key.endswith("num_batches_tracked"):
                continue
            target = state[_seed_name(key)][k]
            target.copy_(value.reshape(target.shape))
