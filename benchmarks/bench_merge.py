"""Peak memory and throughput of ``genlab merge`` against ``mergekit-yaml`` and against the disk floor, on the
same merge of synthetic Llama-shaped bf16 checkpoints (Hugging Face folders, sharded), run back to back as
subprocesses.

    python benchmarks/bench_merge.py [--layers 4] [--hidden 2048] [--methods ties,task_arithmetic] [--keep DIR]
        [--no-mergekit] [--repeat N]

The floor reads every input tensor with ``safetensors.safe_open`` and writes one output (the base's tensors, through
genlab's writer, fsync included): no merge can take less. "floor, fresh output" writes copies of those tensors in
new memory instead, as a merge writes what it computed (the source of a write is then anonymous memory, not the page
cache: on some machines that alone costs several times the floor). Each tool runs once per method after a warm-up
read of the inputs (so every run reads from the page cache); wall time, CPU time (user + sys) and peak RSS come from
``/usr/bin/time``; every process gets torch's default threads. Throughput is input bytes / wall second. The outputs
are compared with mergekit's tensor by tensor (``genlab``, and ``genlab --no-mmap`` for task_arithmetic and linear,
must be identical; ``--trim threshold`` keeps the same number of entries, and the count of differing entries is
printed). If mergekit is missing, its rows are skipped. On a shared machine, read the ratios (runs back to back),
not the absolute times; with ``--repeat N`` every tool runs N times, the tools taking turns within each round, and
the table shows each tool's median wall / CPU / peak RSS and the median over rounds of its wall time over the same
round's floor (so a slow spell of the machine affects both sides of a ratio).

Last results: see docs/merging.md ("Streaming, speed and memory").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

ROOT = Path(__file__).resolve().parents[1]


def llama_config(hidden: int, layers: int, vocab: int) -> dict:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": hidden * 11 // 4,
        "num_hidden_layers": layers,
        "num_attention_heads": hidden // 128,
        "num_key_value_heads": hidden // 512,
        "vocab_size": vocab,
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }


def llama_shapes(cfg: dict) -> dict[str, tuple[int, ...]]:
    h, f, v, kv = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"], cfg["num_key_value_heads"] * 128
    shapes = {"model.embed_tokens.weight": (v, h), "model.norm.weight": (h,), "lm_head.weight": (v, h)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes.update({
            p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
            p + "self_attn.q_proj.weight": (h, h), p + "self_attn.k_proj.weight": (kv, h),
            p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, h),
            p + "mlp.gate_proj.weight": (f, h), p + "mlp.up_proj.weight": (f, h), p + "mlp.down_proj.weight": (h, f),
        })  # fmt: skip
    return shapes


def _stable_seed(name: str, seed: int) -> int:
    """A seed per (tensor, model) that is the same in every process (``hash`` of a str is salted per process)."""
    return zlib.crc32(f"{name}/{seed}".encode())


def make_model(path: Path, cfg: dict, seed: int, base_seed: int | None, shard_bytes: int) -> int:
    """Write a sharded bf16 checkpoint: the base (base_seed None) or base + 0.02 * noise (an expert)."""
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(cfg, indent=2))
    shards, cur, size, total = [], {}, 0, 0
    for name, shape in llama_shapes(cfg).items():
        g = torch.Generator().manual_seed(_stable_seed(name, base_seed if base_seed is not None else seed))
        t = torch.randn(shape, generator=g) * 0.02
        if base_seed is not None:
            g2 = torch.Generator().manual_seed(_stable_seed(name, seed))
            t += torch.randn(shape, generator=g2) * 0.002
        t = t.to(torch.bfloat16)
        if cur and size + t.numel() * 2 > shard_bytes:
            shards.append(cur)
            cur, size = {}, 0
        cur[name] = t
        size += t.numel() * 2
        total += t.numel() * 2
    shards.append(cur)
    weight_map = {}
    for i, shard in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(path / fname), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(shard, fname))
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
    return total


def timed(cmd: list[str], env: dict) -> dict:
    """Run a command under /usr/bin/time; wall and CPU seconds, peak RSS in MB."""
    out = subprocess.run(
        ["/usr/bin/time", "-f", "TIME %e %U %S %M", *cmd], capture_output=True, text=True, env=env, check=False
    )
    line = next((x for x in out.stderr.splitlines() if x.startswith("TIME ")), None)
    if out.returncode != 0 or line is None:
        raise RuntimeError(f"{cmd[0]} failed ({out.returncode}): {out.stderr[-2000:]}")
    wall, user, sys_, rss = line.split()[1:]
    return {"wall": float(wall), "cpu": float(user) + float(sys_), "rss_mb": int(rss) / 1024}


def disk_floor(inputs: list[Path], out: Path, fresh: bool = False) -> None:
    """Read every tensor of every input with safe_open; write the first input's tensors as one output (with
    ``fresh``, copies of them in new memory, as a merge's output is: the floor for writing computed bytes)."""
    from safetensors import safe_open

    sys.path.insert(0, str(ROOT / "src"))
    from genlab.merging.checkpoint import SafetensorsSource
    from genlab.merging.writer import ShardedWriter, atomic_dir, plan_shards

    sources = [SafetensorsSource(p) for p in inputs]
    first = sources[0]
    shards = plan_shards(list(first.infos.values()), 5_000_000_000)
    handles = [{f: safe_open(str(f), framework="pt") for f in set(s.file_of.values())} for s in sources]
    with atomic_dir(out, force=True) as tmp:
        writer = ShardedWriter(tmp, shards)
        for info in first.infos.values():
            tensors = [h[s.file_of[info.name]].get_tensor(info.name) for s, h in zip(sources, handles)]
            writer.write(info.name, tensors[0].clone() if fresh else tensors[0])
            del tensors
        writer.finish()


def read_all(folder: Path) -> dict[str, torch.Tensor]:
    out = {}
    for f in sorted(folder.glob("*.safetensors")):
        out.update(load_file(str(f)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--experts", type=int, default=2)
    ap.add_argument("--methods", default="ties,task_arithmetic")
    ap.add_argument("--keep", type=Path, default=None, help="work folder to keep (default: a temporary one)")
    ap.add_argument("--no-mergekit", action="store_true", help="leave mergekit's rows out (they take longest)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of every tool (medians are reported)")
    ap.add_argument("--floor", nargs="+", type=Path, help=argparse.SUPPRESS)  # internal: OUT INPUT...
    ap.add_argument("--fresh", action="store_true", help=argparse.SUPPRESS)  # internal: the floor writes copies
    args = ap.parse_args()
    if args.floor:
        disk_floor(args.floor[1:], args.floor[0], args.fresh)
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_merge_"))
    work.mkdir(parents=True, exist_ok=True)
    cfg = llama_config(args.hidden, args.layers, args.vocab)
    names = ["base"] + [f"expert{i}" for i in range(args.experts)]
    total = 0
    for i, name in enumerate(names):
        if not (work / name).exists():
            make_model(work / name, cfg, seed=i, base_seed=None if i == 0 else 0, shard_bytes=200_000_000)
        total += sum(f.stat().st_size for f in (work / name).glob("*.safetensors"))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("OMP_NUM_THREADS", None)
    have_mergekit = shutil.which("mergekit-yaml", path=str(Path(sys.executable).parent)) is not None
    have_mergekit = have_mergekit and not args.no_mergekit
    print(f"inputs: {len(names)} checkpoints, {total / 1e9:.2f} GB (bf16, sharded); work dir {work}")
    idle = timed([sys.executable, "-c", "import torch, safetensors"], env)
    print(f"python + torch import alone: peak RSS {idle['rss_mb']:.0f} MB, {idle['cpu']:.1f} s CPU")
    print(f"{'method':>16} {'tool':>22} {'wall s':>8} {'cpu s':>8} {'peak RSS MB':>12} {'GB/s':>6} {'x floor':>8}")
    floor_cmd = [sys.executable, str(Path(__file__).resolve()), "--floor", str(work / "out_floor")]
    floor_cmd += [str(work / n) for n in names]
    for method in args.methods.split(","):
        merge_cfg = {
            "merge_method": method,
            "base_model": str(work / "base"),
            "models": [{"model": str(work / n), "parameters": {"weight": 0.5, "density": 0.5}} for n in names[1:]],
            "dtype": "bfloat16",
        }
        if method in ("task_arithmetic", "linear"):  # methods without a density
            for m in merge_cfg["models"]:
                m["parameters"].pop("density")
        if method == "linear":  # no base apart: every checkpoint is an input (all three are read, as by the floor)
            merge_cfg.pop("base_model")
            merge_cfg["models"].insert(0, {"model": str(work / "base"), "parameters": {"weight": 1.0}})
        (work / f"{method}.yml").write_text(json.dumps(merge_cfg))
        for n in names:  # warm the page cache so both tools read from memory
            for f in (work / n).glob("*.safetensors"):
                f.read_bytes()
        runs = {
            "floor": floor_cmd,
            "floor, fresh output": [*floor_cmd, "--fresh"],
            "genlab": [sys.executable, "-m", "genlab.cli", "merge", str(work / f"{method}.yml"), "--out",
                       str(work / f"out_genlab_{method}"), "--force", "--quiet"],
        }  # fmt: skip
        if method in ("task_arithmetic", "linear"):  # reading each tensor's bytes into a buffer (before: default)
            runs["genlab --no-mmap"] = [*runs["genlab"], "--no-mmap"]
            runs["genlab --no-mmap"][6] = str(work / f"out_genlab_nommap_{method}")
        if method in ("ties", "breadcrumbs", "breadcrumbs_ties"):
            runs["genlab --trim threshold"] = [*runs["genlab"], "--trim", "threshold"]
            runs["genlab --trim threshold"][6] = str(work / f"out_genlab_fast_{method}")
        if have_mergekit:
            mk = str(Path(sys.executable).parent / "mergekit-yaml")
            runs["mergekit"] = [mk, str(work / f"{method}.yml"), str(work / f"out_mergekit_{method}"),
                                "--random-seed", "0", "--no-copy-tokenizer", "--quiet"]  # fmt: skip
        rounds = [{tool: timed(cmd, env) for tool, cmd in runs.items()} for _ in range(max(1, args.repeat))]
        results = {tool: {key: statistics.median(r[tool][key] for r in rounds) for key in rounds[0][tool]}
                   for tool in runs}  # fmt: skip
        for tool, r in results.items():
            speed = total / 1e9 / r["wall"]
            ratios = [x[tool]["wall"] / x["floor"]["wall"] for x in rounds]
            ratio = statistics.median(ratios)
            spread = "" if len(rounds) == 1 else f" ({min(ratios):.1f}-{max(ratios):.1f})"
            print(f"{method:>16} {tool:>22} {r['wall']:>8.1f} {r['cpu']:>8.1f} {r['rss_mb']:>12.0f} {speed:>6.3f} "
                  f"{ratio:>7.1f}x{spread}")  # fmt: skip
        if "mergekit" in results:
            g, m = results["genlab"], results["mergekit"]
            theirs = read_all(work / f"out_mergekit_{method}")
            ours = read_all(work / f"out_genlab_{method}")
            same = set(ours) == set(theirs) and all(torch.equal(ours[k], theirs[k]) for k in theirs)
            if "genlab --no-mmap" in results:
                mapped = read_all(work / f"out_genlab_nommap_{method}")
                same = same and set(mapped) == set(theirs) and all(torch.equal(mapped[k], theirs[k]) for k in theirs)
            print(f"{method:>16} {'mergekit / genlab':>22} {m['wall'] / g['wall']:>7.1f}x {m['cpu'] / g['cpu']:>7.1f}x "
                  f"{m['rss_mb'] / g['rss_mb']:>11.1f}x   outputs identical: {same}")  # fmt: skip
            if "genlab --trim threshold" in results:
                fast = read_all(work / f"out_genlab_fast_{method}")
                n_diff = sum(int((fast[k] != theirs[k]).sum()) for k in theirs)
                n_all = sum(t.numel() for t in theirs.values())
                print(f"{method:>16} {'--trim threshold':>22} entries differing from mergekit: {n_diff} of {n_all} "
                      f"({n_diff / n_all:.2e}; ties at the k-th magnitude)")  # fmt: skip
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
