"""Tiny seeded quantized base checkpoints and Tinker-layout LoRA adapters for the quantized-merge tests
(engine/tests/test_weights_quantized.py) and the parity cases (test/parity/weights_quant_cases.py).

Each base is a transformers 5 model built from a tiny config with a fixed seed, saved in bfloat16, its
weights then put in the format the real checkpoints ship, with the real checkpoints' quantization_config:
  gpt_oss_mxfp4    GPT-OSS, routed experts `gate_up_proj` / `down_proj` as MXFP4 `_blocks` + `_scales`.
  deepseek_fp8     DeepSeek V3, every Linear of the layers (router excepted) as FP8 + `weight_scale_inv`,
                   blocks of 32x32 (the real ones use 128x128: these tensors are 64 wide), one scale kept in
                   another shard than its weight as real shard splits do.
  kimi_int4        Kimi K2 (model_type kimi_k2 on DeepSeek V3's architecture), routed experts INT4
                   pack-quantized (compressed-tensors, group 32).
  kimi_k25_int4    the same text model in Kimi K2.5's vision-language layout (prefix, nested config).
Tensors are spread over several shards with an index, as save_pretrained writes large models.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file

from tinker_engine.weights import fp8_block, mxfp4, packed_int4

FP8_TEST_BLOCK = [32, 32]


def _build(config, seed: int):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():  # weights of a trained model's scale, so a LoRA delta moves the quantized codes
        for name, p in model.named_parameters():
            if p.ndim >= 2:
                p.normal_(0.0, 0.05)
            elif "norm" not in name:
                p.normal_(0.0, 0.02)
    return model


def _saved_state(model, tmp: Path) -> dict[str, torch.Tensor]:
    """The model's tensors as save_pretrained writes them (transformers 5 splits fused experts back)."""
    from safetensors.torch import load_file

    model.to(torch.bfloat16).save_pretrained(tmp)
    state = {}
    for f in sorted(tmp.glob("*.safetensors")):
        state.update(load_file(str(f)))
    return state


_PART_SUFFIXES = (".weight_packed", ".weight_scale_inv", ".weight_scale", ".weight_shape", "_blocks", "_scales")


def _stem(name: str) -> str:
    for suffix in _PART_SUFFIXES:
        if name.endswith(suffix):
            return name.removesuffix(suffix) + "#"
    return name.removesuffix(".weight") + "#" if name.endswith(".weight") else name


def write_checkpoint(folder: Path, state: dict[str, torch.Tensor], config: dict, shards: int,
                     move: dict[str, int] | None = None) -> None:
    """`state` in `shards` files by name order (plus `move`: tensor -> shard index) with an index."""
    folder.mkdir(parents=True, exist_ok=True)
    names = sorted(state)
    # The tensors of one quantized weight stay together (the reference reads them from one shard).
    groups = sorted({_stem(n) for n in names})
    per = -(-len(groups) // shards)
    group_shard = {g: i // per for i, g in enumerate(groups)}
    where = {n: group_shard[_stem(n)] for n in names}
    where.update(move or {})
    files = [f"model-{i + 1:05d}-of-{shards:05d}.safetensors" for i in range(shards)]
    for i, file in enumerate(files):
        save_file({n: state[n].contiguous() for n in names if where[n] == i}, str(folder / file), metadata={"format": "pt"})
    total = sum(t.numel() * t.element_size() for t in state.values())
    index = {"metadata": {"total_size": total}, "weight_map": {n: files[where[n]] for n in names}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    (folder / "generation_config.json").write_text(json.dumps({"do_sample": False}))


def gpt_oss_config():
    from transformers import GptOssConfig

    return GptOssConfig(num_hidden_layers=2, hidden_size=64, intermediate_size=64, num_attention_heads=4,
                        num_key_value_heads=2, head_dim=16, num_local_experts=4, num_experts_per_tok=2,
                        vocab_size=160, layer_types=["sliding_attention", "full_attention"], sliding_window=8,
                        tie_word_embeddings=False)


def deepseek_config(model_type: str = "deepseek_v3"):
    from transformers import DeepseekV3Config

    return DeepseekV3Config(num_hidden_layers=2, first_k_dense_replace=1, hidden_size=64, intermediate_size=96,
                            moe_intermediate_size=32, n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2,
                            n_group=1, topk_group=1, num_attention_heads=4, num_key_value_heads=4, q_lora_rank=32,
                            kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=16, v_head_dim=16, vocab_size=160,
                            tie_word_embeddings=False)


def gpt_oss_mxfp4(folder: Path, tmp: Path, seed: int = 0, shards: int = 3) -> None:
    config = gpt_oss_config()
    state = _saved_state(_build(config, seed), tmp)
    out = {}
    for key, value in state.items():
        if key.endswith(".experts.gate_up_proj") or key.endswith(".experts.down_proj"):
            blocks, scales = mxfp4.quantize(value.transpose(-1, -2))  # stored (experts, out, in)
            out[key + mxfp4.BLOCKS_SUFFIX], out[key + mxfp4.SCALES_SUFFIX] = blocks, scales
        else:
            out[key] = value
    cfg = json.loads((tmp / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    write_checkpoint(folder, out, cfg, shards)


def _is_fp8_linear(key: str, value: torch.Tensor) -> bool:
    return (key.startswith("model.layers.") and key.endswith(".weight") and value.ndim == 2
            and "norm" not in key and not key.endswith(".mlp.gate.weight"))


def deepseek_fp8(folder: Path, tmp: Path, seed: int = 1, shards: int = 3) -> None:
    state = _saved_state(_build(deepseek_config(), seed), tmp)
    out = {}
    block = tuple(FP8_TEST_BLOCK)
    for key, value in state.items():
        if _is_fp8_linear(key, value):
            weight, scale_inv = fp8_block.quantize(value.float(), block)
            out[key], out[key.removesuffix(".weight") + fp8_block.NATIVE_SCALE_SUFFIX] = weight, scale_inv
        else:
            out[key] = value
    cfg = json.loads((tmp / "config.json").read_text())
    cfg["quantization_config"] = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                  "weight_block_size": FP8_TEST_BLOCK}
    # A weight in the last shard whose scale sits in the first: the merge must fetch it across shards.
    moved = "model.layers.1.mlp.experts.3.up_proj.weight_scale_inv"
    write_checkpoint(folder, out, cfg, shards, move={moved: 0})


def kimi_int4(folder: Path, tmp: Path, seed: int = 2, shards: int = 3, group: int = 32) -> None:
    state = _saved_state(_build(deepseek_config(), seed), tmp)
    out = {}
    for key, value in state.items():
        if fp8_block.is_routed_expert(key) and key.endswith(".weight"):
            stem = key.removesuffix(".weight")
            packed, scale = packed_int4.quantize(value, group)
            out[stem + packed_int4.PACKED_SUFFIX], out[stem + packed_int4.SCALE_SUFFIX] = packed, scale
            out[stem + packed_int4.SHAPE_SUFFIX] = torch.tensor(list(value.shape), dtype=torch.int32)
        else:
            out[key] = value
    cfg = json.loads((tmp / "config.json").read_text())
    cfg["model_type"] = "kimi_k2"
    cfg["quantization_config"] = {
        "config_groups": {"group_0": {"input_activations": None, "output_activations": None, "targets": ["Linear"],
                                      "weights": {"actorder": None, "block_structure": None, "dynamic": False,
                                                  "group_size": group, "num_bits": 4, "observer": "minmax",
                                                  "observer_kwargs": {}, "strategy": "group", "symmetric": True,
                                                  "type": "int"}}},
        "format": "pack-quantized", "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*",
                                               "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"],
        "kv_cache_scheme": None, "quant_method": "compressed-tensors", "quantization_status": "compressed"}
    write_checkpoint(folder, out, cfg, shards)


def kimi_k25_int4(folder: Path, tmp: Path, seed: int = 3, shards: int = 3) -> None:
    """Kimi K2.5's layout: the text model under `language_model.` and its config (quantization_config
    included) under text_config, the vision tower left out."""
    text = tmp / "text"
    kimi_int4(text, tmp / "text-save", seed=seed, shards=1)
    from safetensors.torch import load_file

    state = {}
    for f in text.glob("*.safetensors"):
        state.update(load_file(str(f)))
    text_config = json.loads((text / "config.json").read_text())
    config = {"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
              "text_config": text_config, "tie_word_embeddings": False}
    write_checkpoint(folder, {"language_model." + k: v for k, v in state.items()}, config, shards)


# --- Tinker-layout adapters -------------------------------------------------------------------------

def _pair(g: torch.Generator, out_dim: int, in_dim: int, r: int, experts: int | None = None):
    lead = () if experts is None else (experts,)
    a = torch.randn(*lead, r, in_dim, generator=g) / in_dim ** 0.5
    b = torch.randn(*lead, out_dim, r, generator=g) * 0.05
    return a, b


def write_adapter(folder: Path, modules: dict[str, tuple], r: int, alpha: float, seed: int) -> None:
    """`modules`: Tinker module name (after base_model.model.) -> (out, in) or (out, in, experts_a, experts_b)."""
    g = torch.Generator().manual_seed(seed)
    state = {}
    for name, dims in sorted(modules.items()):
        if len(dims) == 2:
            a, b = _pair(g, dims[0], dims[1], r)
        else:
            out_dim, in_dim, ea, eb = dims
            a = _pair(g, out_dim, in_dim, r, ea)[0]
            b = _pair(g, out_dim, in_dim, r, eb)[1]
        state[f"base_model.model.{name}.lora_A.weight"] = a.contiguous()
        state[f"base_model.model.{name}.lora_B.weight"] = b.contiguous()
    folder.mkdir(parents=True, exist_ok=True)
    save_file(state, str(folder / "adapter_model.safetensors"))
    targets = sorted({n.rsplit(".", 1)[-1] for n in modules})
    (folder / "adapter_config.json").write_text(json.dumps({"r": r, "lora_alpha": alpha, "target_modules": targets,
                                                            "peft_type": "LORA"}))


def gpt_oss_adapter(folder: Path, seed: int = 10, r: int = 4) -> None:
    h, i, e, heads, kv, hd, v = 64, 64, 4, 4, 2, 16, 160
    modules: dict[str, tuple] = {"model.unembed_tokens": (v, h)}
    for layer in range(2):
        p = f"model.layers.{layer}"
        modules.update({f"{p}.attn.q_proj": (heads * hd, h), f"{p}.attn.k_proj": (kv * hd, h),
                        f"{p}.attn.v_proj": (kv * hd, h), f"{p}.attn.o_proj": (h, heads * hd),
                        f"{p}.mlp.experts.w1": (i, h, e, e), f"{p}.mlp.experts.w3": (i, h, 1, e),
                        f"{p}.mlp.experts.w2": (h, i, e, e)})
    write_adapter(folder, modules, r, 2.0 * r, seed)


def deepseek_adapter(folder: Path, seed: int = 11, r: int = 4) -> None:
    h, dense, moe, e, v = 64, 96, 32, 4, 160
    modules: dict[str, tuple] = {"model.unembed_tokens": (v, h)}
    for layer in range(2):
        p = f"model.layers.{layer}.self_attn"
        modules.update({f"{p}.q_a_proj": (32, h), f"{p}.q_b_proj": (4 * 32, 32),
                        f"{p}.kv_a_proj_with_mqa": (32 + 16, h), f"{p}.kv_b_proj": (4 * 32, 32),
                        f"{p}.o_proj": (h, 4 * 16)})
    modules.update({"model.layers.0.mlp.gate_proj": (dense, h), "model.layers.0.mlp.up_proj": (dense, h),
                    "model.layers.0.mlp.down_proj": (h, dense),
                    "model.layers.1.mlp.shared_experts.gate_proj": (moe, h),
                    "model.layers.1.mlp.shared_experts.down_proj": (h, moe),
                    "model.layers.1.mlp.experts.w1": (moe, h, e, e), "model.layers.1.mlp.experts.w3": (moe, h, 1, e),
                    "model.layers.1.mlp.experts.w2": (h, moe, e, 1)})
    write_adapter(folder, modules, r, 2.0 * r, seed)
