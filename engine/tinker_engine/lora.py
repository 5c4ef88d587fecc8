"""LoRA adapters through peft: target-module selection and (de)serialisation in the PEFT layout."""

import warnings
from dataclasses import asdict, dataclass

import torch
from peft import LoraConfig, get_peft_model, get_peft_model_state_dict, set_peft_model_state_dict

from .seeded_rng import global_rng

# Fixed so that learning rates mean the same thing at every rank the client asks for.
LORA_ALPHA = 32
_ATTN_HINTS = ("attn", "attention")
_MLP_HINTS = ("mlp", "feed_forward", "ffn")


@dataclass(frozen=True)
class LoraSpec:
    rank: int = 32
    seed: int = 0
    train_attn: bool = True
    train_mlp: bool = True
    train_unembed: bool = True

    def to_json(self) -> dict:
        return asdict(self)


def target_modules(model: torch.nn.Module, spec: LoraSpec) -> list:
    """Full names of the Linear layers that get adapters, grouped by the train_* flags. A
    vision-language model's adapters go on its language model only: the vision tower (whose
    blocks have attention and MLP layers too) stays frozen."""
    head = model.get_output_embeddings()
    language = _language_model(model)
    targets = []
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Linear):
            continue
        if language is not None and module is not head and id(module) not in language:
            continue
        if module is head:
            if spec.train_unembed:
                targets.append(name)
            continue
        parents = name.lower().split(".")[:-1]
        if spec.train_attn and any(h in p for p in parents for h in _ATTN_HINTS):
            targets.append(name)
        elif spec.train_mlp and any(h in p for p in parents for h in _MLP_HINTS):
            targets.append(name)
    return targets


def _language_model(model: torch.nn.Module):
    """ids of the modules of a vision-language model's language model (None for a text model)."""
    from .images import VISION_MODEL_TYPES

    if getattr(model.config, "model_type", None) not in VISION_MODEL_TYPES:
        return None
    return {id(m) for m in model.get_decoder().modules()}


def attach_lora(model: torch.nn.Module, spec: LoraSpec):
    """Wraps `model` (a module tree of its own) in a PeftModel; adapter init is seeded by spec.seed."""
    targets = target_modules(model, spec)
    if not targets:
        raise ValueError("no Linear layers match the requested train_attn/train_mlp/train_unembed")
    config = LoraConfig(r=spec.rank, lora_alpha=LORA_ALPHA, lora_dropout=0.0, target_modules=targets, bias="none")
    with global_rng(spec.seed), warnings.catch_warnings():
        # The unembedding adapter deliberately applies to the LM head only, not the tied input
        # embeddings, which is what peft's tied-weights warning is about.
        warnings.filterwarnings("ignore", message=".*tie_word_embeddings.*")
        warnings.filterwarnings("ignore", category=FutureWarning)
        peft_model = get_peft_model(model, config)
    peft_model.eval()  # no dropout anywhere; train/eval only differ for dropout here
    return peft_model


def adapter_state(peft_model) -> dict:
    # Tied embeddings must not be saved: they are base weights, shared and frozen.
    state = get_peft_model_state_dict(peft_model, save_embedding_layers=False)
    return {k: v.detach().clone() for k, v in state.items()}


def load_adapter_state(peft_model, state: dict) -> None:
    check_adapter_state(peft_model, state)
    set_peft_model_state_dict(peft_model, state)


def check_adapter_state(peft_model, state: dict) -> None:
    """Raises ValueError unless `state` has exactly the model's adapter tensors, in their shapes."""
    reference = get_peft_model_state_dict(peft_model, save_embedding_layers=False)
    expected = set(reference)
    if set(state) != expected:
        missing = sorted(expected - set(state))[:3]
        extra = sorted(set(state) - expected)[:3]
        raise ValueError(f"adapter does not match the model (missing {missing}, unexpected {extra})")
    for k, v in state.items():
        if tuple(v.shape) != tuple(reference[k].shape):
            raise ValueError(f"adapter tensor {k} has shape {tuple(v.shape)}, model expects {tuple(reference[k].shape)}")
