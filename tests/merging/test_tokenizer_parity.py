"""Parity with mergekit 0.1.5 when the models' vocabularies differ: ``tokenizer_source`` (union, base, a model)
and the ``tokenizer:`` block (``tokens`` entries, ``pad_to_multiple_of``), plus named ``chat_template`` values.
Tiny Llamas with word-level tokenizers built in memory (no download); mergekit's ``run_merge`` and ``genlab
merge`` merge the same folders and every embedding row (looked up by token), every other tensor, config.json's
``vocab_size`` and the tokenizer must agree. Skipped when mergekit is not importable."""

import json

import pytest
import torch
import yaml
from safetensors.torch import load_file

transformers = pytest.importorskip("transformers")

from genlab.merging import merge_to_folder  # noqa: E402
from genlab.merging.errors import MergeConfigError  # noqa: E402

# word lists: the base's, and two experts that drop some of its words and bring their own
VOCABS = {
    "base": [f"w{i}" for i in range(24)],
    "a": [f"w{i}" for i in range(18)] + [f"x{i}" for i in range(5)],
    "b": [f"x{i}" for i in range(3)] + [f"w{i}" for i in range(6, 24)] + ["y0", "y1"],
}
SPECIAL = {"a": ["<|im_start|>"], "b": ["<|im_start|>", "<|im_end|>"]}


def _tokenizer(words, special):
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<unk>": 0, **{w: i + 1 for i, w in enumerate(words)}}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>")
    if special:
        fast.add_special_tokens({"additional_special_tokens": special})
    return fast


def _llama(path, seed, name, tie):
    tok = _tokenizer(VOCABS[name], SPECIAL.get(name))
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(
        vocab_size=len(tok), hidden_size=16, intermediate_size=24, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, tie_word_embeddings=tie,
    )  # fmt: skip
    transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module", params=[False, True], ids=["untied", "tied"])
def llamas(request, tmp_path_factory):
    root = tmp_path_factory.mktemp("vocab_llamas")
    return {name: _llama(root / name, seed, name, request.param) for seed, name in enumerate(VOCABS)}


def _tensors(path):
    out = {}
    for f in sorted(path.glob("*.safetensors")):
        out.update(load_file(str(f)))
    return out


def _run_both(cfg, tmp_path, genlab_cfg=None):
    try:
        from mergekit.config import MergeConfiguration
        from mergekit.merge import MergeOptions, run_merge
    except Exception:
        pytest.skip("mergekit is not importable")
    run_merge(MergeConfiguration.model_validate(cfg), str(tmp_path / "mk"), MergeOptions(quiet=True, random_seed=3))
    (tmp_path / "cfg.yml").write_text(yaml.safe_dump(genlab_cfg or cfg))
    merge_to_folder(tmp_path / "cfg.yml", tmp_path / "gl", seed=3)
    return tmp_path / "gl", tmp_path / "mk"


def _vocab(folder):
    return transformers.AutoTokenizer.from_pretrained(folder).get_vocab()


def _assert_same_by_token(gl, mk):
    """Same vocabulary (as a set), and every tensor equal once the embedding rows are matched by token."""
    ours, theirs = _tensors(gl), _tensors(mk)
    vg, vm = _vocab(gl), _vocab(mk)
    assert set(vg) == set(vm)
    tokens = sorted(vm)
    ig, im = torch.tensor([vg[t] for t in tokens]), torch.tensor([vm[t] for t in tokens])
    assert set(ours) == set(theirs)
    for k in theirs:
        assert ours[k].dtype == theirs[k].dtype and ours[k].shape == theirs[k].shape, k
        if k in ("model.embed_tokens.weight", "lm_head.weight"):
            assert torch.equal(ours[k][ig], theirs[k][im]), k
            assert torch.equal(ours[k][len(vm) :], theirs[k][len(vm) :]), k  # padding rows
        else:
            assert torch.equal(ours[k], theirs[k]), k
    size = [json.loads((f / "config.json").read_text())["vocab_size"] for f in (gl, mk)]
    assert size[0] == size[1] == ours["model.embed_tokens.weight"].shape[0]
    model = transformers.AutoModelForCausalLM.from_pretrained(gl)
    assert model.get_input_embeddings().weight.shape[0] == size[0]


def _files_equal(gl, mk, names):
    for n in names:
        assert (gl / n).read_bytes() == (mk / n).read_bytes(), n


def _added_tokens(folder):
    """tokenizer.json's added tokens with their settings, without their ids (mergekit's ids for a union's new
    tokens follow a hash map's order, which changes from run to run)."""
    spec = json.loads((folder / "tokenizer.json").read_text())
    return sorted(json.dumps({k: v for k, v in t.items() if k != "id"}, sort_keys=True) for t in spec["added_tokens"])


@pytest.mark.slow
def test_union_of_two_vocabularies_matches_mergekit(llamas, tmp_path):
    """Base + one expert: every row (by token), the tokenizer's tokens and settings and the named chat template
    agree with mergekit's; genlab numbers the expert's new words in the order of their ids in the expert."""
    p = llamas
    cfg = {"merge_method": "task_arithmetic", "base_model": str(p["base"]), "tokenizer_source": "union",
           "models": [{"model": str(p["a"]), "parameters": {"weight": 0.6}}], "chat_template": "chatml"}  # fmt: skip
    gl, mk = _run_both(cfg, tmp_path)
    _assert_same_by_token(gl, mk)
    vocab = _vocab(gl)
    assert len(vocab) == 31  # <unk> + 24 words + 5 new words + <|im_start|>
    assert [vocab[f"x{i}"] for i in range(5)] == list(range(25, 30)) and vocab["<|im_start|>"] == 30
    assert _added_tokens(gl) == _added_tokens(mk)
    _files_equal(gl, mk, ["chat_template.jinja"])
    assert json.loads((gl / "config.json").read_text())["vocab_size"] == 31
    tok = transformers.AutoTokenizer.from_pretrained(gl)
    assert tok("w3 x2")["input_ids"] == [vocab["w3"], vocab["x2"]]
    assert "<|im_start|>user" in tok.apply_chat_template([{"role": "user", "content": "w1"}], tokenize=False)
    # a word only the expert has takes the expert's row in the base too, so its task vector there is 0
    ours = _tensors(gl)["model.embed_tokens.weight"]
    a = _tensors(p["a"])["model.embed_tokens.weight"]
    assert torch.equal(ours[vocab["x3"]], a[_vocab(p["a"])["x3"]])


@pytest.mark.slow
def test_union_of_three_vocabularies_matches_mergekit_by_token(llamas, tmp_path):
    """Tokens in two experts but not the base get the experts' mean row, in one the donor's, in the base the
    base's; mergekit's token ids for the experts' new words depend on a set's order, so rows are matched by token."""
    p = llamas
    cfg = {"merge_method": "ties", "base_model": str(p["base"]), "tokenizer_source": "union",
           "parameters": {"density": 0.5},
           "models": [{"model": str(p["a"]), "parameters": {"weight": 0.7}},
                      {"model": str(p["b"]), "parameters": {"weight": 0.4}}]}  # fmt: skip
    gl, mk = _run_both(cfg, tmp_path)
    _assert_same_by_token(gl, mk)
    assert len(_vocab(gl)) == 25 + 5 + 2 + 2  # base + x0-4 + y0-1 + two special tokens
    assert _added_tokens(gl) == _added_tokens(mk)


@pytest.mark.slow
def test_tokenizer_block_tokens_and_padding_match_mergekit(llamas, tmp_path):
    p = llamas
    block = {"source": "union", "pad_to_multiple_of": 16, "tokens": {
        "<new>": {"source": {"kind": "zero"}},
        "w3": {"source": str(p["a"]), "force": True},
        "y1": {"source": {"kind": "model_token", "model": str(p["a"]), "token": "x4"}, "force": True},
        "x0": {"source": {"kind": "model_token", "model": str(p["b"]), "token_id": 2}},
    }}  # fmt: skip
    cfg = {"merge_method": "linear", "base_model": str(p["base"]), "tokenizer": block, "dtype": "float32",
           "models": [{"model": str(p[m]), "parameters": {"weight": w}}
                      for m, w in (("base", 0.5), ("a", 1.0), ("b", 2.0))]}  # fmt: skip
    gl, mk = _run_both(cfg, tmp_path)
    _assert_same_by_token(gl, mk)
    emb = _tensors(gl)["model.embed_tokens.weight"]
    assert emb.shape[0] == 48  # 36 tokens padded to a multiple of 16
    assert torch.equal(emb[_vocab(gl)["<new>"]], torch.zeros(16))


@pytest.mark.slow
@pytest.mark.parametrize("source", ["base", "model:b"])
def test_tokenizer_source_base_or_model_with_other_vocabularies(llamas, tmp_path, source):
    p = llamas
    cfg = {"merge_method": "slerp", "base_model": str(p["base"]), "parameters": {"t": 0.4},
           "tokenizer_source": source if source == "base" else str(p["b"]), "chat_template": "llama3",
           "models": [{"model": str(p["base"])}, {"model": str(p["b"])}]}  # fmt: skip
    gl, mk = _run_both(cfg, tmp_path, {**cfg, "tokenizer_source": source.replace(":b", f":{p['b']}")})
    ours, theirs = _tensors(gl), _tensors(mk)
    assert set(ours) == set(theirs) and all(torch.equal(ours[k], theirs[k]) for k in theirs)
    assert _vocab(gl) == _vocab(mk) == _vocab(p["base" if source == "base" else "b"])
    _files_equal(gl, mk, ["tokenizer.json", "tokenizer_config.json", "chat_template.jinja"])


@pytest.mark.slow
def test_union_over_slices_matches_mergekit(llamas, tmp_path):
    p = llamas
    cfg = {"merge_method": "passthrough", "tokenizer_source": "union", "slices": [
        {"sources": [{"model": str(p["a"]), "layer_range": [0, 2]}]},
        {"sources": [{"model": str(p["b"]), "layer_range": [1, 2]}]},
    ]}  # fmt: skip
    gl, mk = _run_both(cfg, tmp_path)
    _assert_same_by_token(gl, mk)


def test_named_chat_templates_are_mergekit_files():
    """Our copies of mergekit's templates are byte-for-byte the installed mergekit's."""
    from genlab.merging.chat import named_template, template_names

    try:
        from importlib.resources import files

        folder = files("mergekit._data.chat_templates")
    except Exception:
        pytest.skip("mergekit is not importable")
    theirs = sorted(f.name.removesuffix(".jinja") for f in folder.iterdir() if f.name.endswith(".jinja"))
    assert template_names() == theirs == ["alpaca", "chatml", "exaone", "llama3", "mistral"]
    for name in theirs:
        assert named_template(name) == folder.joinpath(f"{name}.jinja").read_text()


def test_unknown_chat_template_name_is_refused():
    from genlab.merging.chat import resolve_chat_template

    with pytest.raises(MergeConfigError, match="template name"):
        resolve_chat_template("chatm", [])
    assert resolve_chat_template("{{ messages }}", []) == "{{ messages }}"


def test_in_memory_merge_refuses_a_tokenizer_merge():
    from genlab.merging import merge_state_dicts

    sd = {"model.embed_tokens.weight": torch.zeros(3, 2)}
    cfg = {"merge_method": "linear", "tokenizer_source": "union", "models": [{"model": "a"}]}
    with pytest.raises(MergeConfigError, match="merge_to_folder"):
        merge_state_dicts({"a": sd}, cfg)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["alpaca", "exaone"])
def test_named_chat_template_without_tokenizer_source_matches_mergekit(llamas, tmp_path, name):
    """Without tokenizer_source mergekit re-saves the donor's tokenizer with the template; genlab copies the
    tokenizer files and writes the template: the template transformers loads is the same. (Without a base_model
    mergekit's donor is the first of a set of models, which varies between runs; genlab's the first listed.)"""
    p = llamas
    cfg = {"merge_method": "linear", "chat_template": name, "base_model": str(p["base"]),  # the donor
           "models": [{"model": str(p[m]), "parameters": {"weight": 1.0}} for m in ("base", "a")]}  # fmt: skip
    gl, mk = _run_both(cfg, tmp_path)
    ours, theirs = (transformers.AutoTokenizer.from_pretrained(f) for f in (gl, mk))
    assert ours.chat_template == theirs.chat_template == (gl / "chat_template.jinja").read_text()
    assert ours.get_vocab() == theirs.get_vocab()


def _bpe_llama(path, seed, vocab, merges, rows):
    """A Llama with a BPE tokenizer whose last tokens lie past the model's vocab_size (``rows``)."""
    from tokenizers import Tokenizer, models

    tk = Tokenizer(models.BPE({t: i for i, t in enumerate(vocab)}, merges, unk_token="<unk>"))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>")
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(
        vocab_size=rows, hidden_size=8, intermediate_size=12, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, tie_word_embeddings=False,
    )  # fmt: skip
    transformers.LlamaForCausalLM(cfg).save_pretrained(path)
    fast.save_pretrained(path)
    return path


@pytest.mark.slow
def test_base_tokens_past_vocab_size_are_stripped_as_mergekit_does(tmp_path):
    """The base's BPE tokenizer has two tokens past its vocab_size: mergekit strips them (and the merges that use
    them) before the union; the expert brings one of them back with its own row."""
    chars = ["<unk>", "a", "b", "c", "ab", "abc", "x", "y"]
    merges = [("a", "b"), ("ab", "c")]
    base = _bpe_llama(tmp_path / "base", 0, chars, merges, rows=6)  # x, y past vocab_size
    expert = _bpe_llama(tmp_path / "e", 1, ["<unk>", "a", "b", "c", "ab", "y", "z"], [("a", "b")], rows=7)
    cfg = {"merge_method": "task_arithmetic", "base_model": str(base), "tokenizer_source": "union",
           "models": [{"model": str(expert), "parameters": {"weight": 0.5}}]}  # fmt: skip
    gl, mk = _run_both(cfg, tmp_path)
    _assert_same_by_token(gl, mk)
    vocab = _vocab(gl)
    assert "x" not in vocab and {"y", "z", "abc"} <= set(vocab) and len(vocab) == 8
