"""Peak memory of merge_adapter's strategies on a multi-shard base (run by `npm run bench:export`).

Builds a Qwen3-shaped base of random float32 weights, one safetensors shard per decoder layer plus one
for the embedding (tied head), and a rank-8 Tinker-layout LoRA on every attention and MLP projection;
or (--base mxfp4) a GPT-OSS-shaped base whose routed experts are MXFP4, with a LoRA on attention and
every expert projection: each merged expert tensor is decoded to float32, 8 times its stored size.
Each strategy then merges in its own process, which reports its peak resident memory (VmHWM); a process
that only imports the merge gives the baseline that every figure includes (Python, PyTorch).
"""

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "engine"
sys.path.insert(0, str(ENGINE))


def peak_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def build(folder: Path, layers: int, hidden: int, intermediate: int, vocab: int, rank: int) -> None:
    import torch
    from safetensors.torch import save_file

    heads, kv_heads, head_dim = hidden // 128, max(1, hidden // 256), 128
    folder.mkdir(parents=True)
    g = torch.Generator().manual_seed(0)
    shards = [f"model-{i + 1:05d}-of-{layers + 1:05d}.safetensors" for i in range(layers + 1)]
    weight_map = {}

    def write(i: int, tensors: dict) -> None:
        save_file(tensors, str(folder / shards[i]), metadata={"format": "pt"})
        weight_map.update({k: shards[i] for k in tensors})

    write(0, {"model.embed_tokens.weight": torch.randn(vocab, hidden, generator=g) * 0.02,
              "model.norm.weight": torch.ones(hidden)})
    shapes = {"self_attn.q_proj": (heads * head_dim, hidden), "self_attn.k_proj": (kv_heads * head_dim, hidden),
              "self_attn.v_proj": (kv_heads * head_dim, hidden), "self_attn.o_proj": (hidden, heads * head_dim),
              "mlp.gate_proj": (intermediate, hidden), "mlp.up_proj": (intermediate, hidden),
              "mlp.down_proj": (hidden, intermediate)}
    adapter = {}
    for layer in range(layers):
        p = f"model.layers.{layer}"
        tensors = {f"{p}.{m}.weight": torch.randn(*s, generator=g) * 0.02 for m, s in shapes.items()}
        tensors.update({f"{p}.input_layernorm.weight": torch.ones(hidden),
                        f"{p}.post_attention_layernorm.weight": torch.ones(hidden),
                        f"{p}.self_attn.q_norm.weight": torch.ones(head_dim), f"{p}.self_attn.k_norm.weight": torch.ones(head_dim)})
        write(layer + 1, tensors)
        del tensors
        for m, (out_dim, in_dim) in shapes.items():
            adapter[f"base_model.model.{p}.{m}.lora_A.weight"] = torch.randn(rank, in_dim, generator=g) * 0.01
            adapter[f"base_model.model.{p}.{m}.lora_B.weight"] = torch.randn(out_dim, rank, generator=g) * 0.01
    total = sum((folder / s).stat().st_size for s in shards)
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": hidden, "intermediate_size": intermediate,
        "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim,
        "vocab_size": vocab, "tie_word_embeddings": True, "dtype": "float32", "rms_norm_eps": 1e-6}))
    adapter_dir = folder.parent / "adapter"
    adapter_dir.mkdir()
    save_file(adapter, str(adapter_dir / "adapter_model.safetensors"))
    (adapter_dir / "adapter_config.json").write_text(json.dumps({"r": rank, "lora_alpha": 2 * rank,
                                                                 "target_modules": sorted({m.split(".")[-1] for m in shapes})}))


def build_mxfp4(folder: Path, layers: int, hidden: int, intermediate: int, vocab: int, rank: int, experts: int) -> None:
    """A GPT-OSS-shaped base: attention in bfloat16, routed experts as MXFP4 blocks and scales (random codes)."""
    import torch
    from safetensors.torch import save_file

    heads, kv_heads, head_dim = hidden // 64, max(1, hidden // 512), 64
    folder.mkdir(parents=True)
    g = torch.Generator().manual_seed(0)
    shards = [f"model-{i + 1:05d}-of-{layers + 1:05d}.safetensors" for i in range(layers + 1)]
    weight_map = {}

    def bf16(*shape):
        return (torch.randn(*shape, generator=g) * 0.02).to(torch.bfloat16)

    def mx(rows: int, cols: int):
        blocks = torch.randint(0, 256, (experts, rows, cols // 32, 16), dtype=torch.uint8, generator=g)
        return blocks, torch.randint(118, 124, (experts, rows, cols // 32), dtype=torch.uint8, generator=g)

    def write(i: int, tensors: dict) -> None:
        save_file(tensors, str(folder / shards[i]), metadata={"format": "pt"})
        weight_map.update({k: shards[i] for k in tensors})

    write(0, {"model.embed_tokens.weight": bf16(vocab, hidden), "lm_head.weight": bf16(vocab, hidden),
              "model.norm.weight": torch.ones(hidden, dtype=torch.bfloat16)})
    attn = {"q_proj": (heads * head_dim, hidden), "k_proj": (kv_heads * head_dim, hidden),
            "v_proj": (kv_heads * head_dim, hidden), "o_proj": (hidden, heads * head_dim)}
    adapter = {}
    for layer in range(layers):
        p = f"model.layers.{layer}"
        tensors = {}
        for m, (out_dim, in_dim) in attn.items():
            tensors[f"{p}.self_attn.{m}.weight"], tensors[f"{p}.self_attn.{m}.bias"] = bf16(out_dim, in_dim), bf16(out_dim)
            adapter[f"base_model.model.{p}.attn.{m}.lora_A.weight"] = torch.randn(rank, in_dim, generator=g) * 0.01
            adapter[f"base_model.model.{p}.attn.{m}.lora_B.weight"] = torch.randn(out_dim, rank, generator=g) * 0.01
        e = f"{p}.mlp.experts"
        tensors[f"{e}.gate_up_proj_blocks"], tensors[f"{e}.gate_up_proj_scales"] = mx(2 * intermediate, hidden)
        tensors[f"{e}.down_proj_blocks"], tensors[f"{e}.down_proj_scales"] = mx(hidden, intermediate)
        tensors.update({f"{e}.gate_up_proj_bias": bf16(experts, 2 * intermediate), f"{e}.down_proj_bias": bf16(experts, hidden),
                        f"{p}.mlp.router.weight": bf16(experts, hidden), f"{p}.mlp.router.bias": bf16(experts),
                        f"{p}.self_attn.sinks": bf16(heads), f"{p}.input_layernorm.weight": torch.ones(hidden, dtype=torch.bfloat16),
                        f"{p}.post_attention_layernorm.weight": torch.ones(hidden, dtype=torch.bfloat16)})
        write(layer + 1, tensors)
        del tensors
        for proj, (out_dim, in_dim) in {"w1": (intermediate, hidden), "w3": (intermediate, hidden), "w2": (hidden, intermediate)}.items():
            adapter[f"base_model.model.{e}.{proj}.lora_A.weight"] = torch.randn(experts, rank, in_dim, generator=g) * 0.01
            adapter[f"base_model.model.{e}.{proj}.lora_B.weight"] = torch.randn(experts, out_dim, rank, generator=g) * 0.01
    total = sum((folder / s).stat().st_size for s in shards)
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": hidden,
        "intermediate_size": intermediate, "num_hidden_layers": layers, "num_attention_heads": heads,
        "num_key_value_heads": kv_heads, "head_dim": head_dim, "num_local_experts": experts, "vocab_size": vocab,
        "tie_word_embeddings": False, "dtype": "bfloat16",
        "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn",
                                "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}}))
    adapter_dir = folder.parent / "adapter"
    adapter_dir.mkdir()
    save_file(adapter, str(adapter_dir / "adapter_model.safetensors"))
    (adapter_dir / "adapter_config.json").write_text(json.dumps({"r": rank, "lora_alpha": 2 * rank,
                                                                 "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "w1", "w2", "w3"]}))


def merge_one(strategy: str, base: str, adapter: str, out: str) -> None:
    from tinker_engine.weights.merge import merge_adapter

    began = time.monotonic()
    if strategy != "none":
        merge_adapter(adapter, base, out, strategy=strategy)
    print(json.dumps({"peak_rss": peak_rss(), "seconds": time.monotonic() - began}))


def run_one(strategy: str, root: Path) -> dict:
    out = root / f"out-{strategy}"
    child = subprocess.run([sys.executable, __file__, "--merge-one", strategy, str(root / "base"), str(root / "adapter"), str(out)],
                           capture_output=True, text=True)
    if child.returncode != 0:
        raise SystemExit(f"{strategy} merge failed:\n{child.stderr}")
    shutil.rmtree(out, ignore_errors=True)
    return json.loads(child.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--merge-one", nargs=4, metavar=("STRATEGY", "BASE", "ADAPTER", "OUT"))
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--intermediate", type=int, default=6144)
    parser.add_argument("--vocab", type=int, default=16384)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--base", choices=("float32", "mxfp4"), default="float32",
                        help="float32: a Qwen3-shaped base; mxfp4: a GPT-OSS-shaped one with MXFP4 experts")
    parser.add_argument("--experts", type=int, default=32, help="experts per layer of the mxfp4 base")
    parser.add_argument("--dir", help="work folder (default: a new temporary one, removed at the end)")
    args = parser.parse_args()
    if args.merge_one:
        merge_one(*args.merge_one)
        return
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-export-"))
    try:
        began = time.monotonic()
        if args.base == "mxfp4":
            build_mxfp4(root / "base", args.layers, args.hidden, args.intermediate, args.vocab, args.rank, args.experts)
        else:
            build(root / "base", args.layers, args.hidden, args.intermediate, args.vocab, args.rank)
        shards = sorted((root / "base").glob("*.safetensors"))
        sizes = [s.stat().st_size for s in shards]
        adapter = (root / "adapter" / "adapter_model.safetensors").stat().st_size
        mib = 1024 * 1024
        what = f"MXFP4 experts ({args.experts} per layer)" if args.base == "mxfp4" else "float32"
        print(f"base: {sum(sizes) / mib:.0f} MiB {what} in {len(shards)} shards (largest {max(sizes) / mib:.0f} MiB), "
              f"adapter {adapter / mib:.1f} MiB; built in {time.monotonic() - began:.0f} s")
        baseline = run_one("none", root)["peak_rss"]
        print(f"baseline (a process that imports the merge and PyTorch): peak RSS {baseline / mib:.0f} MiB")
        print(f"{'strategy':<9} {'peak RSS':>10} {'over baseline':>14} {'/ largest shard':>16} {'/ base':>7} {'wall':>7}")
        for strategy in ("shard", "full"):
            r = run_one(strategy, root)
            over = r["peak_rss"] - baseline
            print(f"{strategy:<9} {r['peak_rss'] / mib:>6.0f} MiB {over / mib:>10.0f} MiB {over / max(sizes):>15.2f}x "
                  f"{over / sum(sizes):>6.2f}x {r['seconds']:>6.1f}s")
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
