"""Small graph networks on torch-geometric: a GIN whose messages can be weighted per edge (the classifier of
pruned or attention-weighted graphs), a graph classifier with sum pooling, and an edge scorer (a GIN plus an MLP
on symmetrised endpoint embeddings) that gives per-edge logits for edge selection (PrunE) or attention (GSAT).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch_geometric.nn import GINConv, global_add_pool
from torch_geometric.typing import OptPairTensor, OptTensor


class WeightedGINConv(GINConv):
    """PyG's :class:`GINConv` with an optional weight per edge multiplying its message:
    h_i' = MLP((1 + eps) h_i + sum_{j -> i} w_ji h_j). ``edge_weight=None`` is the plain GINConv; a 0/1 weight
    removes the edge exactly."""

    # PyG builds ``propagate`` from a declared signature; without this it would reuse GINConv's (x only)
    propagate_type = {"x": OptPairTensor, "edge_weight": OptTensor}

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:  # type: ignore[override]
        out = self.propagate(edge_index, x=(x, x), edge_weight=edge_weight)
        return self.nn(out + (1 + self.eps) * x)

    def message(self, x_j: Tensor, edge_weight: Tensor | None) -> Tensor:  # type: ignore[override]
        return x_j if edge_weight is None else x_j * edge_weight.view(-1, 1)


def _mlp(d_in: int, d_hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.BatchNorm1d(d_hidden), nn.ReLU(), nn.Linear(d_hidden, d_out))


class GIN(nn.Module):
    """``layers`` weighted GIN convolutions, each followed by batch norm and ReLU; returns node embeddings."""

    def __init__(self, d_in: int, hidden: int, layers: int, train_eps: bool = True) -> None:
        super().__init__()
        dims = [d_in] + [hidden] * layers
        self.convs = nn.ModuleList(
            WeightedGINConv(_mlp(a, hidden, b), train_eps=train_eps) for a, b in zip(dims[:-1], dims[1:])
        )
        self.norms = nn.ModuleList(nn.BatchNorm1d(hidden) for _ in range(layers))

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        for conv, norm in zip(self.convs, self.norms):
            x = torch.relu(norm(conv(x, edge_index, edge_weight)))
        return x


class GraphClassifier(nn.Module):
    """GIN -> sum pooling over each graph's nodes -> 2-layer MLP head -> class logits."""

    def __init__(self, d_in: int, hidden: int, layers: int, n_classes: int) -> None:
        super().__init__()
        self.gnn = GIN(d_in, hidden, layers)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, n_classes))

    def forward(self, x: Tensor, edge_index: Tensor, batch: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        return self.head(global_add_pool(self.gnn(x, edge_index, edge_weight), batch))


class EdgeScorer(nn.Module):
    """Per-edge logits from a GIN's node embeddings h: an MLP of h_i + h_j, so both directions of an undirected
    edge get the same logits. (The official PrunE code feeds [h_i, h_j, h_i + h_j] + [h_j, h_i, h_j + h_i] to its
    MLP, which is a function of h_i + h_j alone.) ``out=2`` gives (drop, keep) logits for a categorical edge mask
    (PrunE), ``out=1`` one attention logit (GSAT)."""

    def __init__(self, d_in: int, hidden: int, layers: int, out: int) -> None:
        super().__init__()
        self.gnn = GIN(d_in, hidden, layers)
        self.mlp = nn.Sequential(nn.Linear(hidden, 2 * hidden), nn.ReLU(), nn.Linear(2 * hidden, out))

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        h = self.gnn(x, edge_index)
        return self.mlp(h[edge_index[0]] + h[edge_index[1]])
