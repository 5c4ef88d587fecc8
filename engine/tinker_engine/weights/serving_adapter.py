"""The PEFT adapter folder vLLM and SGLang load (`--lora-modules` / `--lora-paths`), from a Tinker adapter:
the reference's `build_lora_adapter`, number for number.

Tinker's adapter names become the base checkpoint's module names (`model.unembed_tokens` -> `lm_head`, or
the input embedding of a tied head), family by family: GPT-OSS's `.attn` -> `.self_attn`; Nemotron H's
`model.layers.` -> `backbone.layers.`, its expert `w1`/`w2` -> `up_proj`/`down_proj`, its Mamba
`gate_proj` + `x_proj` LoRAs joined into one LoRA on the fused `in_proj` (ranks summed, `rank_pattern` and
`alpha_pattern` keep alpha / r), and then `backbone.` -> `model.` because vLLM renames Nemotron's weights
so; Qwen3.5's `model.language_model.` prefix. MoE experts, one 3-D pair per projection in Tinker, become
one 2-D pair per expert (`experts.<i>.gate_proj`), a shared (1-expert) side broadcast. Tensors are written
as the adapter holds them (lora_B unscaled; the config's lora_alpha / r scales them at load).
DeepSeek V3 is refused with the reference's reason: vLLM and SGLang serve no LoRA on it.

The family rules here are the adapter's, not the merge's (profiles.py): the reference's converter keeps
Kimi K2.5's names as `model.*` and leaves Qwen3.5's split in_proj_q/k/v apart, where its merge does not.

Beyond the reference, every converted module is checked against the base's tensors (name and shape), so
an adapter trained on another base is refused instead of written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import torch

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"

UNSUPPORTED_MODEL_TYPES = {
    "deepseek_v3": (
        "DeepSeek V3/V3.1 (model_type='deepseek_v3') does not support LoRA adapter serving in vLLM or SGLang; "
        "export it merged (--format merged) instead"
    ),
}
# vLLM renames these checkpoint prefixes at load time; adapter keys must use the renamed ones.
SERVING_PREFIX_REMAPS = {"nemotron_h": (("backbone.", "model."),)}
SWIGLU_EXPERTS = ((".w1.weight", ".gate_proj.weight"), (".w3.weight", ".up_proj.weight"), (".w2.weight", ".down_proj.weight"))
SPLIT_QKV_MODEL_TYPES = ("qwen3_5", "qwen3_5_moe")


class AdapterConversionError(Exception):
    """The adapter cannot be served on this base; the message says why (and names the tensor)."""


@dataclass(frozen=True)
class AdapterRules:
    family: str = "default"
    extra_key_remaps: tuple[tuple[str, str], ...] = ()
    expert_key_remaps: tuple[tuple[str, str], ...] = SWIGLU_EXPERTS
    fused_projection_map: tuple[tuple[str, tuple[str, ...]], ...] = ()
    language_model_prefix: bool = False
    qwen3_5_names: bool = False


def adapter_rules(config: dict, keys: set[str]) -> AdapterRules:
    """The family's adapter rules, detected in the reference's order (GPT-OSS, DeepSeek V3, Nemotron H,
    Qwen3.5, Kimi K2.5, default)."""
    inner_prefix = any(k.startswith("model.language_model.") for k in keys)
    architectures = config.get("architectures") or []
    model_type = config.get("model_type")
    if any("GptOss" in a for a in architectures):
        return AdapterRules("gpt_oss", extra_key_remaps=((".attn", ".self_attn"),), language_model_prefix=inner_prefix)
    if model_type == "deepseek_v3":
        return AdapterRules("deepseek", language_model_prefix=inner_prefix)
    if any("NemotronH" in a for a in architectures):
        return AdapterRules(
            "nemotron",
            extra_key_remaps=(("model.layers.", "backbone.layers."), ("model.lm_head", "lm_head")),
            expert_key_remaps=((".w1.weight", ".up_proj.weight"), (".w2.weight", ".down_proj.weight")),
            fused_projection_map=(("in_proj", ("gate_proj", "x_proj")),),
            language_model_prefix=inner_prefix,
        )
    if model_type in SPLIT_QKV_MODEL_TYPES:
        return AdapterRules("qwen3_5", language_model_prefix=inner_prefix, qwen3_5_names=True)
    if model_type == "kimi_k25":
        return AdapterRules("kimi_k25")
    return AdapterRules("default", language_model_prefix=inner_prefix)


_VL_PREFIX = ("model.", "model.language_model.")


def name_remaps(rules: AdapterRules, keys: set[str]) -> list[tuple[str, str]]:
    remaps = [("base_model.model.", "")]
    if rules.qwen3_5_names:
        if rules.language_model_prefix:
            remaps.append(_VL_PREFIX)
            top_head = any(k == "lm_head.weight" or k.startswith("lm_head.") for k in keys)
            remaps.append(("model.language_model.unembed_tokens",
                           "lm_head" if top_head else "model.language_model.embed_tokens"))
        else:
            remaps.append(("model.unembed_tokens", "lm_head"))
        return remaps
    has_head = "lm_head.weight" in keys or any(k.endswith(".lm_head.weight") for k in keys)
    remaps.append(("model.unembed_tokens", "lm_head" if has_head else "model.embed_tokens"))
    if rules.language_model_prefix:
        remaps.append(_VL_PREFIX)
    return remaps


def _replace_all(name: str, remaps) -> str:
    for old, new in remaps:
        name = name.replace(old, new)
    return name


def _expand_experts(lora_a: torch.Tensor, lora_b: torch.Tensor, key: str) -> tuple[torch.Tensor, torch.Tensor]:
    if lora_a.ndim != 3 or lora_b.ndim != 3:
        raise AdapterConversionError(f"expert LoRA tensors must be 3-D, got lora_A {tuple(lora_a.shape)} and "
                                     f"lora_B {tuple(lora_b.shape)} for {key!r}")
    if lora_a.shape[0] == 1 and lora_b.shape[0] == 1:
        raise AdapterConversionError(f"expert LoRA of {key!r}: both lora_A and lora_B hold one expert")
    if lora_a.shape[0] == 1:
        lora_a = lora_a.expand(lora_b.shape[0], -1, -1)
    elif lora_b.shape[0] == 1:
        lora_b = lora_b.expand(lora_a.shape[0], -1, -1)
    elif lora_a.shape[0] != lora_b.shape[0]:
        raise AdapterConversionError(f"expert LoRA of {key!r}: lora_A holds {lora_a.shape[0]} experts, "
                                     f"lora_B {lora_b.shape[0]}")
    return lora_a, lora_b


class _Collected:
    def __init__(self):
        self.weights: dict[str, torch.Tensor] = {}
        self.targets: set[str] = set()
        self.sources: dict[str, str] = {}  # module path -> the adapter name it came from (for errors)

    def add(self, target_key: str, lora_a: torch.Tensor, lora_b: torch.Tensor, source: str) -> None:
        module = target_key.removesuffix(".weight")
        key_a, key_b = f"base_model.model.{module}.lora_A.weight", f"base_model.model.{module}.lora_B.weight"
        if key_a in self.weights:
            raise AdapterConversionError(f"two adapter tensors land on {module!r} (the second: {source!r}); "
                                         "a misconfigured adapter or an unsupported architecture")
        self.weights[key_a], self.weights[key_b] = lora_a, lora_b
        self.targets.add(module.rsplit(".", 1)[-1])
        self.sources[module] = source


def _fused_model_key(layer_prefix: str, suffix: str, keys: set[str]) -> str:
    match = re.search(r"\.layers\.(\d+)\.", layer_prefix)
    if match:
        pattern = f".layers.{match.group(1)}."
        for k in keys:
            if pattern in k and k.endswith(suffix):
                return k
    raise AdapterConversionError(f"the base has no tensor for layer {layer_prefix!r} ending in {suffix!r}")


def convert(adapter: dict[str, torch.Tensor], rules: AdapterRules, shapes: dict[str, tuple[int, ...]]):
    """(PEFT tensors, sorted target_modules, rank overrides of fused targets) of a Tinker adapter."""
    keys = set(shapes)
    names = [n.replace(".lora_A", "") for n in adapter if ".lora_A" in n]
    remaps = name_remaps(rules, keys)
    fused_part_of = {part: fused for fused, parts in rules.fused_projection_map for part in parts}
    out = _Collected()
    pending: dict[tuple[str, str], list[tuple[str, torch.Tensor, torch.Tensor]]] = {}
    for n in names:
        source = n.replace(".weight", ".lora_A.weight")
        lora_a = adapter[source]
        b_key = n.replace(".weight", ".lora_B.weight")
        if b_key not in adapter:
            raise AdapterConversionError(f"adapter tensor {source!r} has no lora_B pair")
        lora_b = adapter[b_key]
        # The engine's own adapters already carry a VL model's language_model prefix: not added twice.
        own_names = ".language_model." in n
        target = _replace_all(_replace_all(n, [r for r in remaps if not (own_names and r == _VL_PREFIX)]),
                              rules.extra_key_remaps)
        if ".experts" in n:
            if lora_a.numel() == 0 and lora_b.numel() == 0:
                continue  # a placeholder for a projection the family lacks (Nemotron's w3)
            target = _replace_all(target, rules.expert_key_remaps)
            lora_a, lora_b = _expand_experts(lora_a, lora_b, target)
            for i in range(lora_a.shape[0]):
                # Own copies: broadcast slices share storage, which safetensors refuses.
                out.add(target.replace(".experts", f".experts.{i}"), lora_a[i].clone(), lora_b[i].clone(), source)
            continue
        leaf = target.removesuffix(".weight").rsplit(".", 1)[-1]
        if leaf in fused_part_of:
            prefix = target.removesuffix(f".{leaf}.weight")
            pending.setdefault((prefix, fused_part_of[leaf]), []).append((leaf, lora_a, lora_b))
        else:
            out.add(target, lora_a, lora_b, source)
    rank_overrides: dict[str, int] = {}
    for (prefix, fused), parts in pending.items():
        rank_overrides[fused] = _join_fused(prefix, fused, parts, rules, shapes, out)
    if not out.weights:
        raise AdapterConversionError("the adapter holds no LoRA tensors (…lora_A.weight / …lora_B.weight)")
    return out, sorted(out.targets), rank_overrides


def _join_fused(prefix: str, fused: str, parts, rules: AdapterRules, shapes, out: _Collected) -> int:
    """One LoRA on a fused projection from its parts' LoRAs: A stacked, B block-diagonal in row order."""
    model_key = _fused_model_key(prefix, f".{fused}.weight", set(shapes))
    order = next(p for f, p in rules.fused_projection_map if f == fused)
    by_name = {name: (a, b) for name, a, b in parts}
    a_parts, blocks, rows, rank = [], [], 0, 0
    for name in order:
        if name not in by_name:
            raise AdapterConversionError(f"the adapter has no {name!r} part for the fused {model_key!r} "
                                         f"(parts in order: {order})")
        a, b = by_name[name]
        a_parts.append(a)
        blocks.append((rows, rows + b.shape[0], rank, b))
        rows, rank = rows + b.shape[0], rank + a.shape[0]
    joined_b = torch.zeros(shapes[model_key][0], rank, dtype=a_parts[0].dtype)
    for row0, row1, rank0, b in blocks:
        joined_b[row0:row1, rank0:rank0 + b.shape[1]] = b
    out.add(f"{prefix}.{fused}.weight", torch.cat(a_parts, dim=0), joined_b, f"{prefix}.{'+'.join(order)}")
    return rank


# --- the adapter against the base's tensors ---------------------------------------------------------------

_PREFIXES = ("model.language_model.", "language_model.model.", "language_model.", "backbone.", "model.")
_QUANT_SUFFIXES = (".weight_packed", "_blocks")


def _core(path: str) -> str:
    for p in _PREFIXES:
        if path.startswith(p):
            return path[len(p):]
    return path


def _base_modules(shapes: dict[str, tuple[int, ...]]) -> dict[str, set | None]:
    """Module core name -> the (out, in) shapes a LoRA on it may have (None: present, shape not checked)."""
    modules: dict[str, set | None] = {}
    for key, shape in shapes.items():
        fused = re.match(r"(.*\.experts)\.(gate_up_proj|down_proj)(_blocks)?$", key)
        if fused and len(shape) >= 3:
            stem, proj, quantized = fused.groups()
            e, t1, t2 = shape[0], shape[1], shape[2]
            if proj == "gate_up_proj":
                allowed = None if quantized else {(t2 // 2, t1), (t1 // 2, t2)}
                leaves = ("gate_proj", "up_proj")
            else:
                allowed = None if quantized else {(t1, t2), (t2, t1)}
                leaves = ("down_proj",)
            for i in range(e):
                for leaf in leaves:
                    modules[_core(f"{stem}.{i}.{leaf}")] = allowed
            continue
        if key.endswith(".weight") and len(shape) == 2:
            modules[_core(key[: -len(".weight")])] = {tuple(shape)}
        if key.endswith(".in_proj_qkv.weight"):  # Qwen3.5's Q‖K‖V: Tinker's in_proj_q/k/v stay apart here
            for part in ("in_proj_q", "in_proj_k", "in_proj_v"):
                modules[_core(key[: -len("in_proj_qkv.weight")] + part)] = None
        for suffix in _QUANT_SUFFIXES:
            if key.endswith(suffix):
                modules.setdefault(_core(key[: -len(suffix)]), None)
    # A tied head has no tensor of its own, but the module is there (the engine's adapters name it lm_head).
    for embed in ("embed_tokens", "embeddings"):
        if "lm_head" not in modules and embed in modules:
            modules["lm_head"] = modules[embed]
    return modules


def check_fits_base(collected: _Collected, shapes: dict[str, tuple[int, ...]], base: str, adapter_file: str) -> None:
    modules = _base_modules(shapes)
    for key, lora_a in collected.weights.items():
        if not key.endswith(".lora_A.weight"):
            continue
        module = key[len("base_model.model."): -len(".lora_A.weight")]
        lora_b = collected.weights[key.replace(".lora_A.", ".lora_B.")]
        source = collected.sources[module]
        core = _core(module)
        if core not in modules:
            raise AdapterConversionError(f"{adapter_file}: tensor {source!r} targets {module!r}, which base model "
                                         f"{base} does not have (an adapter trained on another base?)")
        allowed = modules[core]
        shape = (lora_b.shape[0], lora_a.shape[1])
        if allowed is not None and shape not in allowed:
            raise AdapterConversionError(f"{adapter_file}: tensor {source!r} makes a {shape} update for {module!r}, "
                                         f"where base model {base} holds {sorted(allowed)[0]} (an adapter trained "
                                         "on another base?)")


# --- the folder ---------------------------------------------------------------------------------------------

def peft_config(adapter_config: dict, base_model: str, targets: list[str], rank_overrides: dict[str, int]) -> dict:
    rank, alpha = adapter_config["r"], adapter_config["lora_alpha"]
    return {
        "peft_type": "LORA",
        "auto_mapping": None,
        "base_model_name_or_path": base_model,
        "bias": "none",
        "fan_in_fan_out": False,
        "inference_mode": True,
        "init_lora_weights": True,
        "lora_alpha": alpha,
        "lora_dropout": 0.0,
        "modules_to_save": None,
        "r": rank,
        "rank_pattern": dict(rank_overrides),
        # alpha / r stays the adapter's on a fused target whose rank is the parts' sum.
        "alpha_pattern": {m: int(alpha * r / rank) for m, r in rank_overrides.items()},
        "target_modules": targets,
        "task_type": "CAUSAL_LM",
    }


def build_serving_adapter(adapter: dict[str, torch.Tensor], adapter_config: dict, base_config: dict,
                          shapes: dict[str, tuple[int, ...]], *, base_model: str, base_label: str,
                          adapter_file: str, check: bool = True) -> tuple[dict[str, torch.Tensor], dict]:
    """(tensors, adapter_config.json) of the serving adapter; raises AdapterConversionError. `check`:
    refuse modules the base lacks or whose shapes differ (off when the base's tensors are unknown)."""
    for key in ("lora_alpha", "r"):
        if key not in adapter_config:
            raise AdapterConversionError(f"adapter config has no {key!r}")
    model_type = base_config.get("model_type", "")
    if model_type in UNSUPPORTED_MODEL_TYPES:
        raise AdapterConversionError(UNSUPPORTED_MODEL_TYPES[model_type])
    rules = adapter_rules(base_config, set(shapes))
    collected, targets, rank_overrides = convert(adapter, rules, shapes)
    if check:
        check_fits_base(collected, shapes, base_label, adapter_file)
    weights = collected.weights
    if model_type in SERVING_PREFIX_REMAPS:
        weights = {_replace_all(k, SERVING_PREFIX_REMAPS[model_type]): v for k, v in weights.items()}
    return weights, peft_config(adapter_config, base_model, targets, rank_overrides)


def write_serving_adapter(folder: Path, weights: dict[str, torch.Tensor], config: dict) -> None:
    from safetensors.torch import save_file

    save_file({k: v.contiguous() for k, v in weights.items()}, str(folder / ADAPTER_WEIGHTS), metadata={"format": "pt"})
    (folder / ADAPTER_CONFIG).write_text(json.dumps(config, indent=2) + "\n")
