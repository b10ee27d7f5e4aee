"""genlab's RL pieces: a vectorised, language-conditioned pick-up grid world (numpy, Gymnasium-style API) for a
toy VLA, and the RL objectives every study shares — GAE, GRPO group advantages, the DPO loss, and token-level GRPO
and DPO for language-model policies (:func:`completion_mask`, :func:`grpo_loss`, :func:`policy_gradient_step`,
:func:`sequence_logprobs`, :func:`preference_pairs`, :func:`dpo_step`).

The observation follows MiniGrid's symbolic conventions: an ``(H, W, 3)`` integer image per environment whose
channels are (object type, colour, agent-here flag) with MiniGrid's type ids (wall 2, floor 3, key 5, ball 6,
box 7) and colour ids (red 0, green 1, blue 2, purple 3, yellow 4, grey 5; 6 and 7 are extra "texture" colours
used only by the vision shift), plus a mission ``(colour, type)`` token pair ("pick up the red ball"). Actions:
0-3 move up/down/left/right, 4 pick up the object under the agent. Picking up the target ends the episode with
MiniGrid's reward ``1 - 0.9 t / max_steps``; picking up another object ends it with 0.

Shifts (``Shift``): the training distribution starts the agent in the left columns, draws target and distractor
objects from the *seen* (colour, type) combinations and paints floor/walls with seen colours. ``vision`` paints
them with unseen colours, ``semantics`` asks for an unseen combination (colour and type each seen on their own),
``execution`` starts the agent in the right columns and pushes it to a random neighbour cell mid-episode.

Why not MiniGrid itself: rl-vs-sft-vla's quick preset (about 2 CPU-minutes for demos, three RL arms and
evaluation over 6 seeds) takes ~3e5 environment steps in all; a Python-loop MiniGrid env steps ~2.6e3/s here
(BabyAI-PickupLoc-v0, random actions); this one steps a batch in one numpy call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

WALL, FLOOR, KEY, BALL, BOX = 2, 3, 5, 6, 7
OBJ_TYPES = (KEY, BALL, BOX)
OBJ_COLOURS = (0, 1, 2, 3)
TRAIN_BG = (4, 5)  # yellow, grey floor / wall
UNSEEN_BG = (6, 7)  # colours never shown in training
N_TYPE_IDS, N_COLOUR_IDS = 11, 8
COLOUR_NAMES = ("red", "green", "blue", "purple", "yellow", "grey", "cyan", "orange")
TYPE_NAMES = {KEY: "key", BALL: "ball", BOX: "box"}
MOVES = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]])  # up, down, left, right (row, col)
PICKUP = 4
N_ACTIONS = 5
SHIFTS = ("train", "vision", "semantics", "execution")


def unseen_combos() -> list[tuple[int, int]]:
    """Held-out (colour, type) pairs: one type per colour, so every colour and every type is seen elsewhere."""
    return [(c, OBJ_TYPES[c % 3]) for c in OBJ_COLOURS]


def seen_combos() -> list[tuple[int, int]]:
    held = set(unseen_combos())
    return [(c, t) for c in OBJ_COLOURS for t in OBJ_TYPES if (c, t) not in held]


@dataclass(frozen=True)
class Shift:
    name: str = "train"
    push_prob: float = 0.0

    def __post_init__(self):
        if self.name not in SHIFTS:
            raise ValueError(f"shift must be one of {SHIFTS}")


class PickUpGrid:
    """``n`` independent rooms stepped together; ``reset(seed)`` is a pure function of (seed, n, shift).

    ``view`` is the side of the agent-centred window (odd; default ``2 size - 3``, the whole room from any cell;
    ``2 size - 5`` still shows every inner cell, and the walls nearest the agent)."""

    def __init__(self, n: int, shift: Shift = Shift(), size: int = 8, n_objects: int = 3, max_steps: int = 24,
                 view: int | None = None):  # fmt: skip
        self.n, self.shift, self.size, self.k, self.max_steps = n, shift, size, n_objects, max_steps
        self.inner = size - 2
        self.view = 2 * size - 3 if view is None else view
        if self.view % 2 == 0 or self.view < 2 * size - 5:
            raise ValueError(f"view must be odd and >= {2 * size - 5} (every inner cell in sight)")

    # -- reset -----------------------------------------------------------------------------------------------
    def reset(self, seed: int, repeat: int = 1):
        """New episodes; with ``repeat`` > 1, ``n // repeat`` start states each copied ``repeat`` times in a row."""
        if self.n % repeat:
            raise ValueError("n must be a multiple of repeat")
        rng = np.random.default_rng(seed)
        m, k, s = self.n // repeat, self.k, self.inner
        name = self.shift.name
        cols = np.arange(s // 2, s) if name == "execution" else np.arange(0, s // 3)
        agent = np.stack([rng.integers(0, s, m), rng.choice(cols, m)], 1) + 1
        cells = np.argsort(rng.random((m, s * s)), axis=1)  # random distinct cells, minus the agent's
        flat_agent = (agent[:, 0] - 1) * s + agent[:, 1] - 1
        cells = np.array([row[row != a][:k] for row, a in zip(cells, flat_agent, strict=True)])
        obj_pos = np.stack([cells // s, cells % s], -1) + 1
        seen, held = np.array(seen_combos()), np.array(unseen_combos())
        target = (held if name == "semantics" else seen)[rng.integers(0, len(held if name == "semantics" else seen), m)]
        combos = np.zeros((m, k, 2), dtype=np.int64)
        combos[:, 0] = target
        for j in range(1, k):  # distractors: seen combos different from the target
            d = seen[rng.integers(0, len(seen), m)]
            same = (d == target).all(1)
            while same.any():
                d[same] = seen[rng.integers(0, len(seen), int(same.sum()))]
                same = (d == target).all(1)
            combos[:, j] = d
        order = np.argsort(rng.random((m, k)), axis=1)  # the target is not always object 0
        obj_pos = np.take_along_axis(obj_pos, order[..., None], 1)
        combos = np.take_along_axis(combos, order[..., None], 1)
        tgt_idx = np.argmin(order, axis=1)
        bg = UNSEEN_BG if name == "vision" else TRAIN_BG
        floor, wall = np.array(bg)[rng.integers(0, 2, m)], np.array(bg)[rng.integers(0, 2, m)]
        rep = lambda a: np.repeat(a, repeat, axis=0)  # noqa: E731
        self.agent, self.obj_pos, self.obj_col, self.obj_type = (
            rep(agent),
            rep(obj_pos),
            rep(combos[..., 0]),
            rep(combos[..., 1]),
        )
        self.target, self.floor, self.wall = rep(tgt_idx), rep(floor), rep(wall)
        self.mission = np.stack(
            [self.obj_col[np.arange(self.n), self.target], self.obj_type[np.arange(self.n), self.target]], 1
        )
        self.alive = np.ones((self.n, k), dtype=bool)
        self.t = 0
        self.done = np.zeros(self.n, dtype=bool)
        self.push_rng = np.random.default_rng([seed, 1])
        return self.obs(), {}

    # -- observation -----------------------------------------------------------------------------------------
    def obs(self) -> dict:
        n, h = self.n, self.size
        img = np.zeros((n, h, h, 3), dtype=np.int64)
        img[..., 0] = FLOOR
        img[..., 1] = self.floor[:, None, None]
        border = np.zeros((h, h), dtype=bool)
        border[[0, -1], :] = border[:, [0, -1]] = True
        img[:, border, 0] = WALL
        img[:, border, 1] = self.wall[:, None]
        ii = np.arange(n)
        for j in range(self.k):
            a = self.alive[:, j]
            r, c = self.obj_pos[a, j, 0], self.obj_pos[a, j, 1]
            img[ii[a], r, c, 0] = self.obj_type[a, j]
            img[ii[a], r, c, 1] = self.obj_col[a, j]
        img[ii, self.agent[:, 0], self.agent[:, 1], 2] = 1
        # agent-centred view (as MiniGrid's): a ``view``-wide window centred on the agent, type 0 ("unseen") outside
        v = self.view
        half = (v - 1) // 2
        pad = np.zeros((n, h + 2 * half, h + 2 * half, 3), dtype=np.int64)
        pad[:, half : half + h, half : half + h] = img
        r0, c0 = self.agent[:, 0], self.agent[:, 1]
        rows = (r0[:, None] + np.arange(v)[None])[:, :, None]
        cols = (c0[:, None] + np.arange(v)[None])[:, None, :]
        view = pad[ii[:, None, None], rows, cols]
        return {"image": view, "mission": self.mission.copy()}

    def mission_strings(self) -> list[str]:
        return [f"pick up the {COLOUR_NAMES[c]} {TYPE_NAMES[t]}" for c, t in self.mission]

    # -- step ------------------------------------------------------------------------------------------------
    def step(self, actions: np.ndarray):
        a = np.asarray(actions)
        live = ~self.done
        move = live & (a < PICKUP)
        nxt = self.agent + MOVES[np.minimum(a, 3)]
        ok = move & (nxt.min(1) >= 1) & (nxt.max(1) <= self.inner)
        self.agent[ok] = nxt[ok]
        reward = np.zeros(self.n)
        on = (self.obj_pos == self.agent[:, None, :]).all(-1) & self.alive  # (n, k)
        pick = live & (a == PICKUP) & on.any(1)
        which = np.argmax(on, 1)
        success = pick & (which == self.target)
        self.t += 1
        reward[success] = 1 - 0.9 * self.t / self.max_steps
        if self.shift.push_prob > 0:  # execution perturbation: a random shove to a neighbour cell
            shove = live & ~pick & (self.push_rng.random(self.n) < self.shift.push_prob)
            to = self.agent + MOVES[self.push_rng.integers(0, 4, self.n)]
            shove &= (to.min(1) >= 1) & (to.max(1) <= self.inner)
            self.agent[shove] = to[shove]
        terminated = pick
        truncated = live & ~pick & (self.t >= self.max_steps)
        self.done |= terminated | truncated
        return self.obs(), reward, terminated, truncated, {"success": success}

    # -- scripted planner ------------------------------------------------------------------------------------
    def distance_to_target(self) -> np.ndarray:
        """BFS (wavefront) distances from the target cell over the walkable cells, (n, H, W); walls = large."""
        n, h = self.n, self.size
        big = 10**6
        walk = np.zeros((h, h), dtype=bool)
        walk[1:-1, 1:-1] = True
        dist = np.full((n, h, h), big, dtype=np.int64)
        tp = self.obj_pos[np.arange(n), self.target]
        dist[np.arange(n), tp[:, 0], tp[:, 1]] = 0
        for _ in range(h * h):
            nb = np.full_like(dist, big)
            nb[:, 1:, :] = np.minimum(nb[:, 1:, :], dist[:, :-1, :] + 1)
            nb[:, :-1, :] = np.minimum(nb[:, :-1, :], dist[:, 1:, :] + 1)
            nb[:, :, 1:] = np.minimum(nb[:, :, 1:], dist[:, :, :-1] + 1)
            nb[:, :, :-1] = np.minimum(nb[:, :, :-1], dist[:, :, 1:] + 1)
            new = np.where(walk, np.minimum(dist, nb), big)
            if np.array_equal(new, dist):
                break
            dist = new
        return dist

    def expert_actions(self) -> np.ndarray:
        """The planner's action: pick up when on the target, else step to the neighbour closest by BFS."""
        dist = self.distance_to_target()
        ii = np.arange(self.n)
        here = dist[ii, self.agent[:, 0], self.agent[:, 1]]
        nb = self.agent[:, None, :] + MOVES[None]
        d = dist[ii[:, None], np.clip(nb[..., 0], 0, self.size - 1), np.clip(nb[..., 1], 0, self.size - 1)]
        return np.where(here == 0, PICKUP, np.argmin(d, 1))


# -- losses --------------------------------------------------------------------------------------------------


def group_advantages(returns, group: int, eps: float = 1e-6, unbiased: bool = True):
    """GRPO advantages (torch): each return minus its group's mean, over the group's standard deviation (+``eps``;
    ``unbiased`` as ``torch.std``, which TRL's GRPO uses); ``returns`` holds ``group`` consecutive samples per start
    state or prompt, and a group whose returns are all equal gets zeros."""
    r = returns.reshape(-1, group)
    return ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True, unbiased=unbiased) + eps)).reshape(-1)


def dpo_loss(logp_w, logp_l, ref_w, ref_l, beta: float):
    """Mean DPO loss −log σ(β[(log π(w) − log π_ref(w)) − (log π(l) − log π_ref(l))]) over pairs."""
    import torch.nn.functional as F

    return -F.logsigmoid(beta * ((logp_w - ref_w) - (logp_l - ref_l))).mean()


def gae(rewards, values, active, gamma: float, lam: float):
    """Generalised advantage estimates over (T, n) arrays; steps after an episode ends are masked out."""
    import torch

    t_max = rewards.shape[0]
    adv = torch.zeros_like(rewards)
    last = torch.zeros_like(rewards[0])
    for t in reversed(range(t_max)):
        nxt_v = values[t + 1] * active[t + 1] if t + 1 < t_max else torch.zeros_like(last)
        nxt_a = active[t + 1] if t + 1 < t_max else torch.zeros_like(last)
        delta = rewards[t] + gamma * nxt_v - values[t]
        last = (delta + gamma * lam * nxt_a * last) * active[t]
        adv[t] = last
    return adv


# -- token-level GRPO and DPO for language-model policies (ifbench-rlvr; any model with token_logprobs) --------


def completion_mask(completions: torch.Tensor, eos: int | Sequence[int]) -> torch.Tensor:
    """1 for completion tokens up to and including the first end token, 0 after it. ``eos`` is one token id or
    several (a chat model may end a turn with an end-of-turn or an end-of-text token)."""
    import torch

    if isinstance(eos, int):
        is_eos = (completions == eos).int()
    else:
        is_eos = torch.isin(completions, torch.as_tensor(list(eos), device=completions.device)).int()
    after = (is_eos.cumsum(1) - is_eos) > 0
    return (~after).float()


def grpo_loss(
    logprobs: torch.Tensor,
    mask: torch.Tensor,
    advantages: torch.Tensor,
    ref_logprobs: torch.Tensor | None = None,
    beta: float = 0.0,
) -> torch.Tensor:
    """On-policy GRPO objective (one update per batch, so the PPO ratio is 1): minus the advantage-weighted
    mean token log-probability, plus ``beta`` times the k3 estimate of KL(policy || reference)."""
    import torch

    per_token = -advantages[:, None] * logprobs
    if ref_logprobs is not None and beta > 0:
        diff = ref_logprobs - logprobs
        per_token = per_token + beta * (torch.exp(diff) - diff - 1)
    return ((per_token * mask).sum(1) / mask.sum(1).clamp(min=1)).mean()


def policy_gradient_step(
    policy: Any,
    optimizer: torch.optim.Optimizer,
    prompts: Any,
    completions: torch.Tensor,
    weights: torch.Tensor,
    *,
    eos: int | Sequence[int],
    ref: Any = None,
    beta: float = 0.0,
    micro_batch: int = 0,
) -> None:
    """One optimiser step on :func:`grpo_loss` for sampled ``completions`` of ``prompts`` with per-completion
    ``weights``: GRPO's group advantages, or ones for supervised fine-tuning on the completions (the mean token
    log-likelihood of each completion, averaged over completions).

    ``policy`` and ``ref`` are any models with ``token_logprobs(prompts, completions)``; ``prompts`` is whatever
    they take (a token tensor, an :class:`~genlab.nn.hf_policy.ChatBatch`) and must support ``prompts[a:b]``.
    ``ref`` is used only when ``beta > 0``. With ``micro_batch > 0`` the batch goes through the model in slices
    of that many rows and the gradients are accumulated: the update is the same, the memory smaller."""
    import torch

    n = len(completions)
    size = micro_batch if 0 < micro_batch < n else n
    mask = completion_mask(completions, eos)
    weights = weights.to(completions.device)
    optimizer.zero_grad()
    for start in range(0, n, size):
        rows = slice(start, start + size)
        logp = policy.token_logprobs(prompts[rows], completions[rows])
        ref_logp = None
        if ref is not None and beta > 0:
            with torch.no_grad():
                ref_logp = ref.token_logprobs(prompts[rows], completions[rows])
        loss = grpo_loss(logp, mask[rows], weights[rows], ref_logp, beta)
        (loss if size == n else loss * (len(logp) / n)).backward()
    optimizer.step()


def sequence_logprobs(policy: Any, prompts: Any, completions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log π(completion | prompt) per row: the sum of the token log-probabilities under ``mask``
    (:func:`completion_mask`: through the first end token)."""
    return (policy.token_logprobs(prompts, completions) * mask).sum(1)


def dpo_step(
    policy: Any,
    optimizer: torch.optim.Optimizer,
    prompts: Any,
    chosen: torch.Tensor,
    rejected: torch.Tensor,
    *,
    eos: int | Sequence[int],
    ref: Any,
    beta: float,
    micro_batch: int = 0,
) -> float:
    """One optimiser step on :func:`dpo_loss` for preference pairs: ``chosen[i]`` preferred to ``rejected[i]``,
    both answering ``prompts[i]``; sequence log-probabilities (:func:`sequence_logprobs`) under ``policy`` and
    the frozen ``ref``. ``policy``, ``ref`` and ``prompts`` are as in :func:`policy_gradient_step`, and so is
    ``micro_batch`` (slices of that many pairs, gradients accumulated: the same update). Returns the loss."""
    import torch

    n = len(chosen)
    size = micro_batch if 0 < micro_batch < n else n
    mask_w, mask_l = completion_mask(chosen, eos), completion_mask(rejected, eos)
    optimizer.zero_grad()
    total = 0.0
    for start in range(0, n, size):
        rows = slice(start, start + size)
        logp_w = sequence_logprobs(policy, prompts[rows], chosen[rows], mask_w[rows])
        logp_l = sequence_logprobs(policy, prompts[rows], rejected[rows], mask_l[rows])
        with torch.no_grad():
            ref_w = sequence_logprobs(ref, prompts[rows], chosen[rows], mask_w[rows])
            ref_l = sequence_logprobs(ref, prompts[rows], rejected[rows], mask_l[rows])
        loss = dpo_loss(logp_w, logp_l, ref_w, ref_l, beta) * (len(logp_w) / n)
        loss.backward()
        total += float(loss.detach())
    optimizer.step()
    return total


def preference_pairs(rewards: torch.Tensor, group: int) -> list[tuple[int, int]]:
    """(chosen, rejected) row indices from ``group`` consecutive samples per prompt ranked by reward: the first
    best against the first worst of each group; a group whose rewards are all equal gives no pair."""
    r = rewards.reshape(-1, group)
    pairs = []
    for g, row in enumerate(r.tolist()):
        hi, lo = max(range(group), key=row.__getitem__), min(range(group), key=row.__getitem__)
        if row[hi] > row[lo]:
            pairs.append((g * group + hi, g * group + lo))
    return pairs
