"""Every `genlab ...` command that README.md and docs/ show in a code block runs, so the docs cannot drift.

Commands run in-process in a sandbox folder holding the small input files the docs name. What the test changes
is only what keeps CI fast, never what could hide a broken command: studies run their ``smoke`` preset, at most
two seeds and two values per grid key, into a temporary run store. Commands that need something only a user
has (a model folder, an inference server, a cluster) are skipped with that reason, listed in ``NEEDS_USER``.
"""

from __future__ import annotations

import json
import re
import shlex
import tarfile
from pathlib import Path

import numpy as np
import pytest

from genlab.cli import main
from genlab.ifbench import nlp

ROOT = Path(__file__).resolve().parents[1]
RESOURCES = ROOT / "tests" / "resources"  # official prompt files and NLTK data the repository ships (see its README)
IFBENCH_FIXTURES = ROOT / "tests" / "ifbench" / "fixtures"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

NEEDS_USER = {  # pattern in the command -> why the test cannot run it here
    "/path/to/": "a model folder the user provides",
    "/models/": "a model folder the user provides",
    "image_folder=/data/": "an image folder the user provides",
    "--base-url http": "an OpenAI-compatible inference server",
    "--backend hf --model ./": "a local transformers model",
    "--preset full": "the full preset (hours); its config is still built by tests/studies/test_smoke_all.py",
}
NEEDS_NETWORK = {  # exact command -> why; the same command with --from or --show runs
    "genlab ifbench setup": "the network (NLTK's downloader); `genlab ifbench setup --from ...` runs instead",
}
STUDY_COMMANDS = ("run", "reproduce", "sweep")
STORE_COMMANDS = ("list", "run", "reproduce", "sweep", "show")


def documented_commands(text: str) -> list[str]:
    """``genlab ...`` lines of fenced or indented code blocks (continuations joined, trailing comments cut)."""
    out, fenced, lines = [], False, text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("```"):
            fenced = not fenced
        elif fenced or line.startswith("    "):
            cmd = line.strip().removeprefix("$ ")
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1].rstrip() + " " + lines[i].strip()
            if cmd.startswith("genlab "):
                out.append(re.split(r"\s+#\s", cmd)[0].strip())
        i += 1
    return out


CASES = [
    pytest.param(cmd, id=f"{page.relative_to(ROOT)}:{cmd[:60]}")
    for page in DOCS
    for cmd in dict.fromkeys(documented_commands(page.read_text()))
]


def test_the_docs_show_commands():
    assert len(CASES) > 30


def for_ci(args: list[str], store: Path) -> list[str]:
    """The command as CI runs it: smoke preset, ≤ 2 seeds and grid values, the temporary store."""
    out: list[str] = []
    it = iter(range(len(args)))
    for i in it:
        a = args[i]
        if a in ("--preset", "-p") and args[0] in STUDY_COMMANDS:
            out += [a, "smoke"]
            next(it)
        elif a == "--seeds":
            out += [a, str(min(2, int(args[i + 1])))]
            next(it)
        elif a in ("--grid", "-g"):
            key, _, values = args[i + 1].partition("=")
            out += [a, f"{key}={','.join(values.split(',')[:2])}"]
            next(it)
        elif a == "--address":
            next(it)  # a cluster address: the test starts a local Ray instead
        else:
            out.append(a)
    if out[0] in STUDY_COMMANDS and not {"--preset", "-p"} & set(out):
        out += ["--preset", "smoke"]
    if out[0] in STORE_COMMANDS:
        out += ["--root", str(store)]
    if out[0] in ("report", "export"):  # their store is the first argument
        out = [out[0], str(store), *[a for a in out[1:] if a != "runs"]]
    return out


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> Path:
    """A folder with the input files the docs name."""
    box = tmp_path_factory.mktemp("docs-sandbox")
    rng = np.random.default_rng(0)
    models = [f"m{i}" for i in range(24)]
    (box / "A.csv").write_text("model,id_acc\n" + "".join(f"{m},{0.5 + i / 60:.4f}\n" for i, m in enumerate(models)))
    correct = (rng.random((len(models), 40)) < 0.6).astype(int)
    header = "model," + ",".join(f"x{j}" for j in range(40)) + "\n"
    rows = "".join(f"{m}," + ",".join(map(str, r)) + "\n" for m, r in zip(models, correct))
    (box / "C.csv").write_text(header + rows)
    write_ifbench_inputs(box)
    write_merge_inputs(box)
    return box


def write_merge_inputs(box: Path) -> None:
    """docs/merging.md's checkpoints (Hugging Face folders) and its two YAML files, taken from the page itself."""
    import torch
    from safetensors.torch import save_file

    for seed, name in enumerate(("base", "expert_a", "expert_b")):
        (box / name).mkdir()
        g = torch.Generator().manual_seed(seed)
        tensors = {"w": torch.randn(8, 4, generator=g), "b": torch.randn(8, generator=g)}
        save_file(tensors, str(box / name / "model.safetensors"), metadata={"format": "pt"})
        (box / name / "config.json").write_text('{"model_type": "toy"}')
    yamls = re.findall(r"```yaml\n(.*?)```", (ROOT / "docs" / "merging.md").read_text(), re.S)
    (box / "merge.yml").write_text(next(y for y in yamls if "merge_method: ties" in y))
    (box / "cmm.yml").write_text(next(y for y in yamls if "merge_method: cmm" in y))


def write_ifbench_inputs(box: Path) -> None:
    """The official prompt files, responses to them, an lm-eval samples file, an inspect_ai log, NLTK data."""
    responses = []
    for name in ("IFBench_test.jsonl", "input_data.jsonl"):
        source = next(RESOURCES.rglob(name))
        (box / name).write_bytes(source.read_bytes())
        for i, line in enumerate(source.read_text().splitlines()):
            responses.append({"prompt": json.loads(line)["prompt"], "response": "A short answer. " * (i % 5 + 1)})
    for name in ("my_model.jsonl", "base.jsonl", "tuned.jsonl"):
        (box / name).write_text("".join(json.dumps(r) + "\n" for r in responses))
        responses = [{**r, "response": r["response"].upper()} for r in responses]
    (box / "samples_ifeval_2026-01-01T00-00-00.jsonl").write_bytes(
        next(IFBENCH_FIXTURES.glob("samples_ifeval_*")).read_bytes()
    )
    (box / "logs").mkdir()
    (box / "logs" / "2026-01-01_ifeval_abc.eval").write_bytes((IFBENCH_FIXTURES / "inspect_ifeval.eval").read_bytes())
    (box / "my_prompts.txt").write_text("Describe a lighthouse.\nExplain how bread rises.\n")
    with tarfile.open(box / "nltk_data.tar.gz", "w:gz") as tar:
        tar.add(RESOURCES / "nltk_data", arcname="nltk_data")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A run store holding one smoke run, so `report`, `list` and `show` have something to read in any order."""
    root = tmp_path_factory.mktemp("docs-store")
    main(["run", "phi-curve", "--preset", "smoke", "--root", str(root)])
    return root


@pytest.mark.slow
@pytest.mark.parametrize("command", CASES)
def test_documented_command_runs(command, sandbox, store, monkeypatch, capsys, request):
    reason = NEEDS_NETWORK.get(command)
    reason = reason or next((why for pattern, why in NEEDS_USER.items() if pattern in command), None)
    if reason:
        pytest.skip(f"needs {reason}")
    args = for_ci(shlex.split(command)[1:], store)
    monkeypatch.chdir(sandbox)
    monkeypatch.setenv("BROWSER", "true")  # `--open` opens nothing in CI
    monkeypatch.setenv("NLTK_DATA", str(RESOURCES / "nltk_data"))  # as after `genlab ifbench setup`
    nlp.reset()
    request.addfinalizer(nlp.reset)
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    err = capsys.readouterr().err
    assert code == 0, f"`{command}` (run as `genlab {shlex.join(args)}`) exited {code}: {err[-2000:]}"
