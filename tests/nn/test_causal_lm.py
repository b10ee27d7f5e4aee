import copy

import pytest
import torch

from genlab.nn.causal_lm import TinyLM
from genlab.rl import completion_mask, group_advantages, grpo_loss, policy_gradient_step


def test_group_advantages_are_normalised_within_groups():
    r = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.5, 0.5, 0.5, 0.5])
    a = group_advantages(r, 4)
    assert torch.allclose(a[:4], torch.tensor([1.0, -1.0, 1.0, -1.0]) * (0.5 / r[:4].std()), atol=1e-5)
    assert torch.all(a[4:] == 0)  # equal rewards: no signal


def test_completion_mask_keeps_tokens_through_the_first_eos():
    comp = torch.tensor([[5, 6, 3, 7, 3], [5, 5, 5, 5, 5]])
    assert completion_mask(comp, eos=3).tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]


def test_grpo_step_raises_probability_of_rewarded_completion():
    torch.manual_seed(0)
    model = TinyLM(8, d_model=16, n_heads=2, n_layers=1, max_len=8)
    prompts = torch.tensor([[1, 2]] * 2)
    comps = torch.tensor([[4, 3], [5, 3]])  # two samples of one group; the first is rewarded
    adv = group_advantages(torch.tensor([1.0, 0.0]), 2)
    before = model.token_logprobs(prompts, comps).sum(1).detach()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(5):
        loss = grpo_loss(model.token_logprobs(prompts, comps), completion_mask(comps, 3), adv)
        opt.zero_grad()
        loss.backward()
        opt.step()
    after = model.token_logprobs(prompts, comps).sum(1).detach()
    assert after[0] > before[0] and after[1] < before[1]


def test_kl_term_is_zero_at_the_reference_and_positive_away_from_it():
    logp = torch.log(torch.tensor([[0.5, 0.25]]))
    mask = torch.ones(1, 2)
    zero_adv = torch.zeros(1)
    assert grpo_loss(logp, mask, zero_adv, logp.clone(), beta=1.0).item() == 0.0
    assert grpo_loss(logp, mask, zero_adv, logp - 0.3, beta=1.0).item() > 0


def test_sampling_shapes_greedy_determinism_and_padding_after_eos():
    torch.manual_seed(0)
    model = TinyLM(6, d_model=16, n_heads=2, n_layers=1, max_len=12)
    prompts = torch.tensor([[1, 2], [1, 4], [1, 5]])
    g1 = model.sample(prompts, 6, eos=3, pad=0, temperature=0)
    assert g1.shape == (3, 6) and torch.equal(g1, model.sample(prompts, 6, eos=3, pad=0, temperature=0))
    gen = torch.Generator().manual_seed(1)
    s = model.sample(prompts.repeat(20, 1), 6, eos=3, pad=0, temperature=1.0, generator=gen)
    for row in s.tolist():
        if 3 in row:
            assert all(t == 0 for t in row[row.index(3) + 1 :])


def test_completion_mask_accepts_several_end_tokens():
    comp = torch.tensor([[5, 9, 7, 3], [5, 3, 9, 9], [5, 5, 5, 5]])
    assert completion_mask(comp, eos=[3, 9]).tolist() == [[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1]]
    assert completion_mask(comp, eos=[3]).tolist() == completion_mask(comp, eos=3).tolist()


def test_policy_gradient_step_in_micro_batches_makes_the_same_update():
    torch.manual_seed(0)
    base = TinyLM(8, d_model=16, n_heads=2, n_layers=1, max_len=8)
    prompts = torch.tensor([[1, 2], [1, 2], [1, 4], [1, 4]])
    comps = torch.tensor([[4, 3, 0], [5, 6, 3], [6, 3, 0], [7, 7, 7]])
    adv = group_advantages(torch.tensor([1.0, 0.0, 0.5, 1.0]), 2)
    models = []
    for micro in (0, 1, 3):
        model = copy.deepcopy(base)
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        policy_gradient_step(model, opt, prompts, comps, adv, eos=3, ref=base, beta=0.1, micro_batch=micro)
        models.append(model)
    for other in models[1:]:
        for p, q in zip(models[0].parameters(), other.parameters()):
            assert torch.allclose(p, q, atol=1e-6)
    assert any(not torch.equal(p, q) for p, q in zip(base.parameters(), models[0].parameters()))


def _cached_model() -> tuple[TinyLM, torch.Tensor]:
    torch.manual_seed(0)
    model = TinyLM(12, d_model=32, n_heads=4, n_layers=2, max_len=14).eval()
    # prompts with padding tokens inside (as the ifbench-rlvr prompts): TinyLM has no attention mask, so a pad is
    # an ordinary token in both paths
    prompts = torch.tensor([[1, 0, 5, 0, 2], [1, 7, 5, 6, 2], [1, 0, 0, 0, 2], [1, 9, 8, 0, 2]]).repeat(8, 1)
    return model, prompts


def test_cached_decoding_gives_the_logits_of_the_full_prefix_forward():
    model, prompts = _cached_model()
    seq = torch.cat([prompts, torch.randint(0, 12, (len(prompts), 9), generator=torch.Generator().manual_seed(2))], 1)
    logits, cache = model.decode(seq[:, :5])
    assert torch.allclose(logits, model(seq[:, :5])[:, -1], atol=1e-5)
    for t in range(5, seq.shape[1]):
        logits, cache = model.decode(seq[:, t : t + 1], cache)
        full = model(seq[:, : t + 1])[:, -1]
        assert logits.dtype == torch.float32 and torch.allclose(logits, full, atol=1e-5, rtol=1e-5)
        assert cache[0][0].shape == (len(seq), 4, t + 1, 8)


def test_cached_sampling_draws_the_same_tokens_as_full_prefix_sampling():
    model, prompts = _cached_model()
    for temperature, max_new in ((1.0, 9), (0.7, 9), (0.0, 9), (1.0, 12)):  # 5 + 12 > max_len: the window path too
        runs = [
            model.sample(prompts, max_new, 3, 0, temperature, torch.Generator().manual_seed(4), use_cache=c)
            for c in (True, False)
        ]
        assert torch.equal(runs[0], runs[1])
        assert runs[0].shape == (len(prompts), max_new)
    ended = runs[0].eq(3).any(1)
    assert ended.any() and not ended.all()  # rows that ended early (then padded) and rows that ran to max_new


def test_cache_refuses_a_sequence_beyond_max_len_and_several_positions_at_once():
    model, prompts = _cached_model()
    _, cache = model.decode(prompts)
    with pytest.raises(ValueError, match="one position"):
        model.decode(prompts[:, :2], cache)
    with pytest.raises(ValueError, match="max_len"):
        model.decode(torch.zeros(len(prompts), 15, dtype=torch.long))
