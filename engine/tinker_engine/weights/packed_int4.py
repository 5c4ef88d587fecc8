"""INT4 group quantization in compressed-tensors' `pack-quantized` format (Kimi K2.x routed experts).

A weight `X.weight` is stored as `X.weight_packed` (int32, (out, in / 8): eight signed 4-bit values per
word, the first in bits 0-3), `X.weight_scale` (bfloat16, (out, in / group): one scale per group of
consecutive inputs) and `X.weight_shape` (int32 [out, in]); value = int4 * scale.

Numbers follow the reference (tinker_cookbook.weights._packed_int4): symmetric scale max|group| / 7
(floored at 1e-12), values rounded half to even and clamped to [-8, 7]; the scale is stored in bfloat16,
so a requantized weight dequantizes with the rounded scale.
"""

from __future__ import annotations

import torch

PACKED_SUFFIX = ".weight_packed"
SCALE_SUFFIX = ".weight_scale"
SHAPE_SUFFIX = ".weight_shape"
WEIGHT_SUFFIX = ".weight"
DEFAULT_GROUP_SIZE = 32
_NIBBLE_SHIFTS = tuple(range(0, 32, 4))


def _shifts(device: torch.device) -> torch.Tensor:
    return torch.tensor(_NIBBLE_SHIFTS, dtype=torch.int32, device=device)


def unpack(packed: torch.Tensor) -> torch.Tensor:
    """int32 (rows, k) -> int8 (rows, 8k) in [-8, 7]."""
    nibbles = (packed.unsqueeze(-1) >> _shifts(packed.device)) & 0xF
    signed = torch.where(nibbles >= 8, nibbles - 16, nibbles)
    return signed.reshape(packed.shape[0], -1).to(torch.int8)


def pack(values: torch.Tensor) -> torch.Tensor:
    """Values in [-8, 7], (rows, cols) with cols divisible by 8 -> int32 (rows, cols / 8)."""
    rows, cols = values.shape
    if cols % 8:
        raise ValueError(f"INT4 packing needs columns divisible by 8, got shape {(rows, cols)}")
    nibbles = (values.to(torch.int32) & 0xF).reshape(rows, cols // 8, 8)
    return (nibbles << _shifts(values.device)).sum(dim=-1).to(torch.int32)


def dequantize(packed: torch.Tensor, scale: torch.Tensor, shape: tuple[int, int], group_size: int = DEFAULT_GROUP_SIZE,
               dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """(packed, scale) -> the weight of `shape` (out, in) in `dtype` (bfloat16 as the reference)."""
    out_dim, in_dim = shape
    values = unpack(packed)[:, :in_dim].reshape(out_dim, -1, group_size).float()
    return (values * scale.float().unsqueeze(-1)).reshape(out_dim, in_dim).to(dtype)


def quantize(weight: torch.Tensor, group_size: int = DEFAULT_GROUP_SIZE) -> tuple[torch.Tensor, torch.Tensor]:
    """The weight (out, in), in divisible by `group_size` -> (packed int32, scale bfloat16)."""
    out_dim, in_dim = weight.shape
    if in_dim % group_size:
        raise ValueError(f"INT4 group quantization needs inputs divisible by {group_size}, got shape {(out_dim, in_dim)}")
    groups = weight.float().reshape(out_dim, -1, group_size)
    scale = (groups.abs().amax(dim=-1) / 7.0).clamp(min=1e-12)
    values = (groups / scale.unsqueeze(-1)).round().clamp(-8, 7).to(torch.int8).reshape(out_dim, in_dim)
    return pack(values), scale.to(torch.bfloat16)


def quantization_config(config: dict) -> dict | None:
    """quantization_config at the top of config.json or under text_config (Kimi K2.5's VL layout)."""
    for level in (config, config.get("text_config")):
        if isinstance(level, dict) and isinstance(level.get("quantization_config"), dict):
            return level["quantization_config"]
    return None


def is_pack_quantized(config: dict) -> bool:
    quant = quantization_config(config)
    return quant is not None and quant.get("format") == "pack-quantized"


def group_size(config: dict) -> int:
    """The first positive weights.group_size among the config groups, else 32."""
    quant = quantization_config(config) or {}
    for group in (quant.get("config_groups") or {}).values():
        weights = group.get("weights") if isinstance(group, dict) else None
        size = weights.get("group_size") if isinstance(weights, dict) else None
        if isinstance(size, int) and not isinstance(size, bool) and size > 0:
            return size
    return DEFAULT_GROUP_SIZE


def dense_shape(packed_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The weight's shape as the packed tensor's header implies it (8 values per word)."""
    return (packed_shape[0], packed_shape[1] * 8) if len(packed_shape) == 2 else None


class PackedInt4Codec:
    """Kimi's INT4 routed experts as logical weights `X.weight` (out, in): merged ones are requantized into
    `X.weight_packed` / `X.weight_scale` (`X.weight_shape` kept) and the rest left as it is; with
    `dequantize`, every one is written as `X.weight` in bfloat16 (or the requested dtype) and config.json
    loses its quantization_config."""

    def __init__(self, group: int, dequantize: bool = False, dtype: torch.dtype | None = None):
        self.group, self.rewrite_all, self.dtype = group, dequantize, dtype or torch.bfloat16

    def logical_shapes(self, stored: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
        from .errors import MergeError

        found = {}
        for key, shape in stored.items():
            name = key.removesuffix(PACKED_SUFFIX) + WEIGHT_SUFFIX
            if not key.endswith(PACKED_SUFFIX) or name in stored:
                continue
            missing = [p for p in self.parts(name)[1:] if p not in stored]
            if missing or dense_shape(shape) is None:
                what = f"has no {' / '.join(missing)}" if missing else f"is not 2-D (shape {list(shape)})"
                raise MergeError(f"base checkpoint: INT4 weight {key} {what}")
            found[name] = dense_shape(shape)
        return found

    def parts(self, logical: str) -> list[str]:
        stem = logical.removesuffix(WEIGHT_SUFFIX)
        return [stem + PACKED_SUFFIX, stem + SCALE_SUFFIX, stem + SHAPE_SUFFIX]

    def decode(self, logical: str, parts: dict[str, torch.Tensor]) -> torch.Tensor:
        packed, scale, shape = (parts[p] for p in self.parts(logical))
        dims = tuple(int(d) for d in shape.tolist())
        if len(dims) != 2:
            from .errors import MergeError

            raise MergeError(f"{self.parts(logical)[2]}: expected a 2-D weight shape, got {list(dims)}")
        return dequantize(packed, scale, dims, self.group).float()

    def encode(self, logical: str, value: torch.Tensor, parts: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        packed_key, scale_key, shape_key = self.parts(logical)
        if self.rewrite_all:
            return {logical: value.to(self.dtype).contiguous()}
        # As the reference: the merged weight is rounded to bfloat16 before it is requantized.
        packed, scale = quantize(value.to(torch.bfloat16), self.group)
        return {packed_key: packed, scale_key: scale, shape_key: parts[shape_key]}

    def finish_config(self, config: dict) -> dict:
        if self.rewrite_all:
            for level in (config, config.get("text_config")):
                if isinstance(level, dict):
                    level.pop("quantization_config", None)
        return config


def codec_for(config: dict, options) -> PackedInt4Codec | None:
    if not is_pack_quantized(config):
        return None
    return PackedInt4Codec(group_size(config), dequantize=bool(options.dequantize), dtype=options.dtype)
