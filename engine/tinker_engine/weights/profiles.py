"""Model families: how a Tinker adapter's tensor names land on a Hugging Face checkpoint's tensors.

A profile is detected from the base's config.json (model_type / architectures) and the tensor names the
checkpoint holds, as the reference's `detect_merge_profile` does (same order: GPT-OSS, DeepSeek V3,
Nemotron H, Qwen3.5/3.6, Kimi K2.5, then the default that covers Qwen3 dense and MoE, Kimi K2 and the
engine's own adapters).

Tinker's adapter names, after the `base_model.model.` prefix: `model.layers.N.self_attn.q_proj` (GPT-OSS:
`.attn`), `model.layers.N.mlp.gate_proj`, `model.unembed_tokens` (the output head), MoE experts as one 3-D
pair per projection `model.layers.N.mlp.experts.w1|w2|w3` ((experts or 1, r, in) / (experts or 1, out, r)),
Qwen3.5's linear attention as `in_proj_q|k|v`, Nemotron's Mamba mixer as `gate_proj` + `x_proj`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

EXPERT_LAYOUTS = ("separate", "fused_concatenated", "fused_interleaved")

# Tinker's expert projections -> Hugging Face's (SwiGLU experts: w1 gate, w3 up, w2 down).
SWIGLU_EXPERTS = (("w1", "gate_proj"), ("w3", "up_proj"), ("w2", "down_proj"))


@dataclass(frozen=True)
class Profile:
    family: str
    expert_layout: str = "separate"
    # Replacements applied in order to the adapter name (after `base_model.model.` is stripped).
    prefix_remaps: tuple[tuple[str, str], ...] = ()
    # Where `unembed_tokens` / a bare `lm_head` goes when the base has its own head tensor.
    head_key: str = "lm_head.weight"
    # The input embedding a tied head shares (the merge unties it: see plan.py).
    embed_key: str = "model.embed_tokens.weight"
    expert_names: tuple[tuple[str, str], ...] = SWIGLU_EXPERTS
    # The axis holding [gate | up] of a fused experts.gate_up_proj when its shape alone cannot tell (a square
    # (experts, 2·inter, hidden) with hidden = 2·inter): 1 is transformers' (experts, 2·inter, hidden) of
    # Qwen3 MoE / Qwen3.5 MoE, 2 Qwen3-VL MoE's (experts, hidden, 2·inter). The reference always takes 2.
    gate_up_axis: int = 1
    # Separately trained projections stored fused in the checkpoint: (fused, (parts in row order)).
    fused_projections: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # config.json keys that say the head is tied (the top-level one and a VL model's text_config one).
    tie_config_paths: tuple[tuple[str, ...], ...] = field(default=(("tie_word_embeddings",),
                                                                   ("text_config", "tie_word_embeddings")))


def _has_fused_experts(keys: set[str]) -> bool:
    return any(k.endswith(".experts.gate_up_proj") for k in keys)


def _has_inner_lm_prefix(keys: set[str]) -> bool:
    return any(k.startswith("model.language_model.") for k in keys)


def _qwen_style(family: str, keys: set[str], *, interleaved: bool = False, extra=(), fused=()) -> Profile:
    inner = _has_inner_lm_prefix(keys)
    fused_layout = "fused_interleaved" if interleaved else "fused_concatenated"
    return Profile(
        family=family,
        expert_layout=fused_layout if _has_fused_experts(keys) else "separate",
        prefix_remaps=((("model.", "model.language_model."),) if inner else ()) + tuple(extra),
        embed_key="model.language_model.embed_tokens.weight" if inner else "model.embed_tokens.weight",
        fused_projections=tuple(fused),
    )


def gpt_oss(config: dict, keys: set[str]) -> Profile | None:
    if not any("GptOss" in a for a in config.get("architectures") or []):
        return None
    return _qwen_style("gpt_oss", keys, interleaved=True, extra=((".attn.", ".self_attn."),))


def deepseek_v3(config: dict, keys: set[str]) -> Profile | None:
    if config.get("model_type") != "deepseek_v3":
        return None
    return replace(_qwen_style("deepseek_v3", keys), expert_layout="separate")


def nemotron_h(config: dict, keys: set[str]) -> Profile | None:
    if not any("NemotronH" in a for a in config.get("architectures") or []):
        return None
    return Profile(
        family="nemotron_h",
        prefix_remaps=(("model.layers.", "backbone.layers."), ("model.lm_head", "lm_head")),
        embed_key="backbone.embeddings.weight",
        # Nemotron's experts are up/down only: Tinker's w1 is up_proj, w2 down_proj, w3 an empty placeholder.
        expert_names=(("w1", "up_proj"), ("w2", "down_proj")),
        # The Mamba mixer's gate and x projections are one in_proj in the checkpoint (gate rows first).
        fused_projections=(("in_proj", ("gate_proj", "x_proj")),),
    )


def qwen3_5(config: dict, keys: set[str]) -> Profile | None:
    if config.get("model_type") not in ("qwen3_5", "qwen3_5_moe"):
        return None
    # Linear-attention layers hold Q‖K‖V as one in_proj_qkv; Tinker trains in_proj_q/k/v apart.
    return _qwen_style("qwen3_5", keys, fused=(("in_proj_qkv", ("in_proj_q", "in_proj_k", "in_proj_v")),))


def kimi_k25(config: dict, keys: set[str]) -> Profile | None:
    if config.get("model_type") != "kimi_k25":
        return None
    # The VL wrapper's outer prefix: language_model.model.layers.*, language_model.lm_head.
    return Profile(
        family="kimi_k25",
        prefix_remaps=(("model.", "language_model.model."),),
        head_key="language_model.lm_head.weight",
        embed_key="language_model.model.embed_tokens.weight",
    )


def default(config: dict, keys: set[str]) -> Profile:
    profile = _qwen_style("default", keys)
    if str(config.get("model_type", "")).startswith("qwen3_vl"):
        return replace(profile, gate_up_axis=2)
    return profile


DETECTORS = (gpt_oss, deepseek_v3, nemotron_h, qwen3_5, kimi_k25)


def detect_profile(config: dict, keys: set[str]) -> Profile:
    """The family profile of a base checkpoint from its config.json and tensor names."""
    for detector in DETECTORS:
        profile = detector(config, keys)
        if profile is not None:
            return profile
    return default(config, keys)
