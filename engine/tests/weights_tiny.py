"""Tiny seeded checkpoints of each family the merge supports, random Tinker-layout adapters for them, and an
independent base-plus-adapter model to check a merge against.

Bases are built from transformers configs (2-3 layers, hidden 32, 4 experts) with a fixed seed and saved
with save_pretrained, as a real checkpoint of the family is laid out on disk (Kimi K2.5's text tensors are
renamed by hand to its Hub layout, `language_model.model.*`, which transformers does not write back).
The adapters use Tinker's names (`base_model.model.model.layers.N…`, `model.unembed_tokens`, experts as
3-D `experts.w1/w2/w3`, Qwen3.5's `in_proj_q/k/v`, Nemotron's `gate_proj`/`x_proj`), derived from the
base's tensors, with lora_alpha / r = 32 / 4.

The independent model (`expected_model`) is the base loaded by transformers in float32 with scale·B·A added
to its in-memory parameters, whose layout differs from the files the merge writes: transformers keeps
experts fused as (experts, 2·inter, hidden) / GPT-OSS (experts, hidden, 2·inter interleaved), Nemotron
under `model.*`, Qwen3.5's head tied.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import torch

RANK, ALPHA = 4, 32
SCALE = ALPHA / RANK
BASE = dict(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
# MoE experts: inter 8 so that a fused gate_up (experts, 16, 32) is not square (see test_square_fused_experts).
DEEPSEEK_TEXT = dict(BASE, num_key_value_heads=4, intermediate_size=64, moe_intermediate_size=8, n_routed_experts=4, n_shared_experts=1,
                     num_experts_per_tok=2, first_k_dense_replace=1, q_lora_rank=16, kv_lora_rank=16,
                     qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8, n_group=1, topk_group=1)
QWEN3_5_TEXT = dict(BASE, head_dim=8, intermediate_size=64, layer_types=["linear_attention", "full_attention"],
                    linear_num_value_heads=4, linear_num_key_heads=2, linear_key_head_dim=8, linear_value_head_dim=8,
                    linear_conv_kernel_dim=4)
QWEN3_5_VISION = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=32, patch_size=4,
                      spatial_merge_size=2, temporal_patch_size=2)
FAMILIES = ("qwen3", "qwen3_tied", "qwen3_moe", "qwen3_moe_fused", "qwen3_5", "qwen3_5_moe", "qwen3_5_moe_fused",
            "gpt_oss", "deepseek_v3", "kimi_k25", "nemotron_h")


def config_for(family: str):
    import transformers as tf

    if family in ("qwen3", "qwen3_tied"):
        return tf.Qwen3Config(**BASE, head_dim=8, intermediate_size=64, tie_word_embeddings=family == "qwen3_tied")
    if family.startswith("qwen3_moe"):
        return tf.Qwen3MoeConfig(**BASE, head_dim=8, intermediate_size=64, num_experts=4, num_experts_per_tok=2,
                                 moe_intermediate_size=8)
    if family == "qwen3_5":
        return tf.Qwen3_5Config(text_config=dict(QWEN3_5_TEXT, tie_word_embeddings=True), vision_config=QWEN3_5_VISION,
                                tie_word_embeddings=True)
    if family.startswith("qwen3_5_moe"):
        text = dict(QWEN3_5_TEXT, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=8,
                    shared_expert_intermediate_size=16)
        return tf.Qwen3_5MoeConfig(text_config=text, vision_config=QWEN3_5_VISION)
    if family == "gpt_oss":
        return tf.GptOssConfig(**BASE, head_dim=8, intermediate_size=16, num_local_experts=4, num_experts_per_tok=2,
                               layer_types=["sliding_attention", "full_attention"], sliding_window=8)
    if family == "deepseek_v3":
        return tf.DeepseekV3Config(**DEEPSEEK_TEXT)
    if family == "kimi_k25":
        return tf.Kimi_K25Config(text_config=dict(DEEPSEEK_TEXT, model_type="deepseek_v3", tie_word_embeddings=False),
                                 vision_config=dict(num_hidden_layers=1, hidden_size=16, intermediate_size=32,
                                                    num_attention_heads=2),
                                 projection_hidden_size=16, tie_word_embeddings=False)
    if family == "nemotron_h":
        return tf.NemotronHConfig(vocab_size=128, hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
                                  head_dim=8, layers_block_type=["mamba", "moe", "attention"], mamba_num_heads=4,
                                  mamba_head_dim=8, ssm_state_size=8, n_groups=1, mamba_d_conv=4, n_routed_experts=4,
                                  num_experts_per_tok=2, moe_intermediate_size=8,
                                  moe_shared_expert_intermediate_size=16, intermediate_size=64, n_group=1,
                                  topk_group=1)
    raise KeyError(family)


def model_class(family: str):
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    return AutoModelForImageTextToText if family.startswith(("qwen3_5", "kimi")) else AutoModelForCausalLM


def _split_fused_experts(state: dict) -> dict:
    """In-memory fused experts (experts, 2·inter, hidden) -> the per-expert tensors of a Hub checkpoint."""
    out = {}
    for key, value in state.items():
        if key.endswith(".experts.gate_up_proj"):
            inter = value.shape[1] // 2
            for e in range(value.shape[0]):
                out[f"{key[:-len('gate_up_proj')]}{e}.gate_proj.weight"] = value[e, :inter].clone()
                out[f"{key[:-len('gate_up_proj')]}{e}.up_proj.weight"] = value[e, inter:].clone()
        elif key.endswith(".experts.down_proj"):
            for e in range(value.shape[0]):
                out[f"{key[:-len('down_proj')]}{e}.down_proj.weight"] = value[e].clone()
        else:
            out[key] = value
    return out


def build_base(family: str, folder: Path, *, dtype=torch.float32, max_shard_size: str | None = None) -> Path:
    """Saves the tiny seeded base of `family` into `folder` (created) and returns it."""
    from safetensors.torch import save_file

    torch.manual_seed(1234)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_class(family).from_config(config_for(family)).to(dtype)
    folder.mkdir(parents=True)
    if family.endswith("_fused") or family == "kimi_k25":
        # Checkpoints written straight from the state dict: fused experts (as Qwen3.5 MoE releases are), or
        # Kimi K2.5's Hub names for its text model.
        model.config.save_pretrained(folder)
        state = {k: v.contiguous() for k, v in model.state_dict().items()}
        if family == "kimi_k25":
            state.pop("lm_head.weight", None)
            state = _split_fused_experts(state)
            state = {("language_model.model." + k[len("model.language_model."):]) if k.startswith("model.language_model.")
                     else k: v for k, v in state.items()}
            state["language_model.lm_head.weight"] = model.lm_head.weight.detach().clone()
        save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    else:
        model.save_pretrained(folder, max_shard_size=max_shard_size or "50GB")
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 1}) + "\n")
    return folder


# --- Tinker-layout adapters ------------------------------------------------------------------------------

_LINEAR = re.compile(r"\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj|q_a_proj|q_b_proj|kv_a_proj_with_mqa|"
                     r"kv_b_proj|in_proj_z|in_proj_qkv|in_proj|out_proj)\.weight$")


def tinker_name(family: str, key: str) -> str:
    """A checkpoint tensor's module as Tinker names it (`base_model.model.` + the text model's names)."""
    name = key[: -len(".weight")] if key.endswith(".weight") else key
    name = name.replace("model.language_model.", "model.").replace("language_model.model.", "model.")
    name = name.replace("backbone.layers.", "model.layers.")
    if family == "gpt_oss":
        name = name.replace(".self_attn.", ".attn.")
    return "base_model.model." + name


def _pair(gen, out_dim: int, in_dim: int, experts: int | None = None, shared_a: bool = False):
    lead = () if experts is None else (1 if shared_a else experts,)
    a = torch.randn(*lead, RANK, in_dim, generator=gen) * 0.2
    b = torch.randn(*(() if experts is None else (experts,)), out_dim, RANK, generator=gen) * 0.2
    return a, b


def build_adapter(family: str, base: Path, folder: Path, *, seed: int = 7, head: bool = True) -> Path:
    """A random adapter in Tinker's layout for the base in `base`, saved as a Tinker checkpoint folder."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    shapes = {}
    for shard in sorted(base.glob("*.safetensors")):
        with safe_open(str(shard), framework="pt") as f:
            shapes.update({k: tuple(f.get_slice(k).get_shape()) for k in f.keys()})  # noqa: SIM118
    gen = torch.Generator().manual_seed(seed)
    pairs: dict[str, tuple] = {}
    experts: dict[str, dict] = {}
    for key in sorted(shapes):
        m = re.match(r"(.*\.experts)\.(\d+)\.(gate_proj|up_proj|down_proj)\.weight$", key)
        if m:
            experts.setdefault(m.group(1), {})[m.group(3)] = shapes[key]
            experts[m.group(1)]["n"] = max(experts[m.group(1)].get("n", 0), int(m.group(2)) + 1)
            continue
        if key.endswith(".experts.gate_up_proj"):
            n, d1, d2 = shapes[key]
            inter, hidden = (d2 // 2, d1) if family == "gpt_oss" else (d1 // 2, d2)
            experts.setdefault(key[: -len(".gate_up_proj")], {}).update(
                n=n, gate_proj=(inter, hidden), up_proj=(inter, hidden))
            continue
        if key.endswith(".experts.down_proj"):
            n, d1, d2 = shapes[key]
            experts.setdefault(key[: -len(".down_proj")], {}).update(n=n, down_proj=(d2, d1) if family == "gpt_oss" else (d1, d2))
            continue
        if not _LINEAR.search(key) or "visual" in key or "vision" in key or "mm_projector" in key:
            continue
        out_dim, in_dim = shapes[key]
        name = tinker_name(family, key)
        if key.endswith(".in_proj_qkv.weight"):  # Qwen3.5: Tinker trains q, k and v apart
            cfg = json.loads((base / "config.json").read_text()).get("text_config", {})
            qk = cfg["linear_num_key_heads"] * cfg["linear_key_head_dim"]
            for part, rows in (("in_proj_q", qk), ("in_proj_k", qk), ("in_proj_v", out_dim - 2 * qk)):
                pairs[name[: -len("in_proj_qkv")] + part] = _pair(gen, rows, in_dim)
        elif key.endswith(".mixer.in_proj.weight"):  # Nemotron's Mamba: gate (z) rows, then the rest
            cfg = json.loads((base / "config.json").read_text())
            z = cfg["mamba_num_heads"] * cfg["mamba_head_dim"]
            pairs[name[: -len("in_proj")] + "gate_proj"] = _pair(gen, z, in_dim)
            pairs[name[: -len("in_proj")] + "x_proj"] = _pair(gen, out_dim - z, in_dim)
        else:
            pairs[name] = _pair(gen, out_dim, in_dim)
    for prefix, info in sorted(experts.items()):
        name = tinker_name(family, prefix + ".weight")
        n = info["n"]
        names = (("w1", "up_proj"), ("w2", "down_proj")) if family == "nemotron_h" else (
            ("w1", "gate_proj"), ("w3", "up_proj"), ("w2", "down_proj"))
        for w, hf in names:
            out_dim, in_dim = info[hf]
            pairs[f"{name}.{w}"] = _pair(gen, out_dim, in_dim, experts=n, shared_a=w == "w2")
        if family == "nemotron_h":  # Tinker's placeholder for the projection Nemotron's experts have not
            pairs[f"{name}.w3"] = (torch.zeros(n, 0, 32), torch.zeros(n, 0, 0))
    if head:
        pairs["base_model.model.model.unembed_tokens"] = _pair(gen, 128, 32)
    state = {}
    for name, (a, b) in pairs.items():
        state[f"{name}.lora_A.weight"], state[f"{name}.lora_B.weight"] = a.contiguous(), b.contiguous()
    folder.mkdir(parents=True)
    save_file(state, str(folder / "adapter_model.safetensors"), metadata={"format": "pt"})
    config = {"r": RANK, "lora_alpha": ALPHA, "target_modules": sorted({n.rsplit(".", 1)[-1] for n in pairs}),
              "base_model_name_or_path": str(base), "peft_type": "LORA"}
    (folder / "adapter_config.json").write_text(json.dumps(config, indent=2) + "\n")
    return folder


# --- the independent base-plus-adapter model ---------------------------------------------------------------

def load(family: str, folder: Path, dtype=torch.float32):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = model_class(family).from_pretrained(str(folder), dtype=dtype)
    return model.eval()


def expected_model(family: str, base: Path, adapter: Path):
    """The base in float32 with every adapter delta added to transformers' in-memory parameters."""
    from safetensors.torch import load_file

    model = load(family, base)
    params = dict(model.named_parameters(remove_duplicate=False))
    state = load_file(str(adapter / "adapter_model.safetensors"))
    head = model.get_output_embeddings()
    if head.weight is model.get_input_embeddings().weight:  # the adapter's head LoRA is the head's alone
        head.weight = torch.nn.Parameter(head.weight.detach().clone())
        params["lm_head.weight"] = head.weight
    cfg = json.loads((base / "config.json").read_text())
    for key in sorted(k for k in state if k.endswith(".lora_A.weight")):
        name = key[: -len(".lora_A.weight")].removeprefix("base_model.model.")
        a, b = state[key].float(), state[key.replace(".lora_A.", ".lora_B.")].float()
        with torch.no_grad():
            _add(family, cfg, params, name, a, b)
    return model


def _memory_name(family: str, name: str) -> str:
    if family.startswith("qwen3_5") or family == "kimi_k25":
        name = name.replace("model.", "model.language_model.", 1)
    if family == "gpt_oss":
        name = name.replace(".attn.", ".self_attn.")
    return name


def _add(family: str, cfg: dict, params: dict, name: str, a, b) -> None:
    if name == "model.unembed_tokens":
        params["lm_head.weight"] += SCALE * b @ a
        return
    if ".experts." in name:
        if a.numel() == 0:
            return
        prefix, w = _memory_name(family, name).rsplit(".", 1)
        n = b.shape[0]
        a = a.expand(n, -1, -1)
        for e in range(n):
            delta = SCALE * b[e] @ a[e]  # (out, in)
            if family == "gpt_oss":
                if w == "w2":
                    params[prefix + ".down_proj"][e] += delta.T
                else:
                    params[prefix + ".gate_up_proj"][e][:, 0 if w == "w1" else 1::2] += delta.T
            elif family == "nemotron_h":
                params[prefix + (".up_proj" if w == "w1" else ".down_proj")][e] += delta
            elif w == "w2":
                params[prefix + ".down_proj"][e] += delta
            else:
                inter = delta.shape[0]
                rows = slice(0, inter) if w == "w1" else slice(inter, 2 * inter)
                params[prefix + ".gate_up_proj"][e][rows] += delta
        return
    module, leaf = _memory_name(family, name).rsplit(".", 1)
    delta = SCALE * b @ a
    if leaf in ("in_proj_q", "in_proj_k", "in_proj_v"):
        text = cfg["text_config"]
        qk = text["linear_num_key_heads"] * text["linear_key_head_dim"]
        start = {"in_proj_q": 0, "in_proj_k": qk, "in_proj_v": 2 * qk}[leaf]
        params[module + ".in_proj_qkv.weight"][start:start + delta.shape[0]] += delta
    elif family == "nemotron_h" and leaf in ("gate_proj", "x_proj"):
        start = 0 if leaf == "gate_proj" else cfg["mamba_num_heads"] * cfg["mamba_head_dim"]
        params[module + ".in_proj.weight"][start:start + delta.shape[0]] += delta
    else:
        params[f"{module}.{leaf}.weight"] += delta


def logits(model, tokens: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=torch.tensor([tokens])).logits[0].float()
