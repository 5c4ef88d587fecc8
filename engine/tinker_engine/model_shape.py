"""What `get_server_capabilities` says about a served model beyond its name and context length.

The protocol's SupportedModel has `model_name` and `max_context_length` (SDK 0.38 adds `trainable`
and `sampleable`); every SDK parses responses with extra fields ignored, so the engine adds the
model's real shape under Hugging Face's config names, for `cookbook models` to show: the built-in
tiny models are 2 layers, 64 wide, whatever served model they stand in for.
"""

import copy
import json
import logging
import math
import struct
from pathlib import Path

import torch

from .base_models import BaseModelSpec, model_class
from .seeded_rng import global_rng

log = logging.getLogger("tinker_engine")


def model_shape(spec: BaseModelSpec) -> dict:
    """The shape fields for `spec` (computed once per spec); those that cannot be read are left out."""
    if "shape" not in spec.extra:
        spec.extra["shape"] = _shape(spec)
    return spec.extra["shape"]


def _shape(spec: BaseModelSpec) -> dict:
    config = spec.config
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    shape = {
        "arch": spec.arch,
        "num_hidden_layers": getattr(text, "num_hidden_layers", None),
        "hidden_size": getattr(text, "hidden_size", None),
        "vocab_size": spec.vocab_size,
        "tokenizer_id": spec.tokenizer_id,
        "source": "builtin" if spec.checkpoint_dir is None else "checkpoint",
    }
    if spec.checkpoint_dir is not None:
        shape["checkpoint_dir"] = spec.checkpoint_dir
    if spec.vision is not None:
        # Whether it takes image chunks, and the numbers a client counts an image's tokens with.
        shape["images"] = (spec.vision.processor.describe() if spec.vision.processor is not None
                           else {"refused": spec.vision.problem})
    try:
        shape["num_parameters"] = _parameter_count(spec)
    except Exception as e:  # an unusual checkpoint must not take the capabilities route down
        log.warning("cannot count the parameters of %s: %s", spec.name, e)
    return {k: v for k, v in shape.items() if v is not None}


def _parameter_count(spec: BaseModelSpec) -> int:
    if spec.checkpoint_dir is not None:
        return _safetensors_parameter_count(Path(spec.checkpoint_dir))
    # A built-in model exists only as a config: build it on the meta device (no memory) and count
    # what a loaded one holds (tied embeddings once). On a copy of the config, holding the global
    # random state and putting it back, so that no model built at the same time or later changes.
    with global_rng(), torch.device("meta"):
        model = model_class(spec.config).from_config(copy.deepcopy(spec.config))
    return sum(p.numel() for p in model.parameters())


def _safetensors_parameter_count(directory: Path) -> int:
    """Elements of every tensor in the checkpoint's safetensors files, from their headers alone."""
    total = 0
    for file in sorted(directory.glob("*.safetensors")):
        with open(file, "rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(length))
        total += sum(math.prod(t["shape"]) for name, t in header.items() if name != "__metadata__")
    return total
