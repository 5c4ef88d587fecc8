"""MXFP4 (OCP Microscaling FP4), the format of GPT-OSS's expert weights.

On disk a weight `X` is two tensors: `X_blocks`, uint8 of shape (*batch, out, n_blocks, 16), each byte two
FP4 E2M1 codes (low nibble first), and `X_scales`, uint8 of shape (*batch, out, n_blocks), one E8M0
exponent per block of 32 values: value = FP4(code) * 2^(scale - 127). The dequantized weight is
(*batch, out, n_blocks * 32); the unquantized model keeps it transposed, (*batch, in, out), and that is
the layout a LoRA delta lands on.

Numbers follow the reference (tinker_cookbook.weights._mxfp4): dequantized to bfloat16; requantized with
the exponent ceil(log2(max|block| / 6)) clamped to [-127, 127] and each value snapped to the nearest FP4
code (ties to the lower code index).
"""

from __future__ import annotations

import torch

BLOCK_SIZE = 32
BLOCKS_SUFFIX = "_blocks"
SCALES_SUFFIX = "_scales"
QUANT_METHODS = ("mxfp4", "mxfp8")

# FP4 E2M1 by code: 0-7 positive, 8-15 the same magnitudes negated (code 8 is -0, read as 0).
FP4_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
FP4_MAX = 6.0
# Rows snapped per step when requantizing: the nearest-code search holds 16 floats per value.
_SNAP_CHUNK_VALUES = 1 << 22


def _table(device: torch.device) -> torch.Tensor:
    return torch.tensor(FP4_VALUES, dtype=torch.float32, device=device)


def unpack(blocks: torch.Tensor) -> torch.Tensor:
    """uint8 (..., k) -> float32 (..., 2k): the FP4 values before scaling, low nibble first."""
    table = _table(blocks.device)
    low = table[(blocks & 0x0F).long()]
    high = table[(blocks >> 4).long()]
    return torch.stack((low, high), dim=-1).flatten(-2)


def _nearest_codes(values: torch.Tensor) -> torch.Tensor:
    table = _table(values.device)
    flat = values.reshape(-1)
    codes = torch.empty(flat.shape, dtype=torch.uint8, device=values.device)
    for start in range(0, flat.numel(), _SNAP_CHUNK_VALUES):
        part = flat[start:start + _SNAP_CHUNK_VALUES]
        # argmin keeps the first of equally near codes, so ties go to the lower index.
        codes[start:start + part.numel()] = (part[:, None] - table[None, :]).abs().argmin(dim=-1).to(torch.uint8)
    return codes.reshape(values.shape)


def pack(values: torch.Tensor) -> torch.Tensor:
    """float (..., 2k), already in FP4 range -> uint8 (..., k): nearest codes, two to a byte."""
    codes = _nearest_codes(values.float())
    pairs = codes.reshape(*values.shape[:-1], values.shape[-1] // 2, 2)
    return pairs[..., 0] | (pairs[..., 1] << 4)


def dequantize(blocks: torch.Tensor, scales: torch.Tensor, dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """(blocks, scales) -> the weight (*batch, out, n_blocks * 32) in `dtype` (bfloat16 as the reference)."""
    values = unpack(blocks) * torch.pow(2.0, scales.float() - 127.0).unsqueeze(-1)
    return values.flatten(-2).to(dtype)


def quantize(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The weight (*batch, out, in), in divisible by 32 -> (blocks, scales)."""
    in_dim = weight.shape[-1]
    if in_dim % BLOCK_SIZE:
        raise ValueError(f"MXFP4 needs the last dimension divisible by {BLOCK_SIZE}, got shape {tuple(weight.shape)}")
    grouped = weight.float().reshape(*weight.shape[:-1], in_dim // BLOCK_SIZE, BLOCK_SIZE)
    peak = grouped.abs().amax(dim=-1).clamp(min=1e-12)
    exponent = torch.ceil(torch.log2(peak / FP4_MAX)).clamp(min=-127, max=127)
    normalized = (grouped / torch.pow(2.0, exponent).unsqueeze(-1)).clamp(-FP4_MAX, FP4_MAX)
    return pack(normalized), (exponent + 127).to(torch.uint8)


def is_mx_block(config: dict) -> bool:
    """config.json's quantization_config names an MX block format (GPT-OSS ships `mxfp4`)."""
    quant = config.get("quantization_config")
    return isinstance(quant, dict) and quant.get("quant_method", "") in QUANT_METHODS


def dense_shape(blocks_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The unquantized model's shape of a `_blocks` tensor's weight: (*batch, in, out)."""
    *batch, out_dim, n_blocks, _ = blocks_shape
    return (*batch, n_blocks * BLOCK_SIZE, out_dim)


class MxBlockCodec:
    """GPT-OSS's MXFP4 experts as logical weights `X` (the unquantized model's name and (*batch, in, out)
    layout, where the planner puts the deltas): merged ones are requantized into `X_blocks` / `X_scales`
    and the rest of the shard is left as it is; with `dequantize`, every one is written as `X` in bfloat16
    (or the requested dtype) and config.json loses its quantization_config."""

    def __init__(self, dequantize: bool = False, dtype: torch.dtype | None = None):
        self.rewrite_all = dequantize
        self.dtype = dtype or torch.bfloat16

    def logical_shapes(self, stored: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
        from .errors import MergeError

        found = {}
        for key, shape in stored.items():
            if not key.endswith(BLOCKS_SUFFIX):
                continue
            name = key.removesuffix(BLOCKS_SUFFIX)
            if len(shape) < 3 or name + SCALES_SUFFIX not in stored or stored[name + SCALES_SUFFIX] != tuple(shape[:-1]):
                raise MergeError(f"base checkpoint: MXFP4 weight {key} of shape {list(shape)} has no matching "
                                 f"{name + SCALES_SUFFIX} (expected shape {list(shape[:-1])})")
            found[name] = dense_shape(shape)
        return found

    def parts(self, logical: str) -> list[str]:
        return [logical + BLOCKS_SUFFIX, logical + SCALES_SUFFIX]

    def decode(self, logical: str, parts: dict[str, torch.Tensor]) -> torch.Tensor:
        dense = dequantize(parts[logical + BLOCKS_SUFFIX], parts[logical + SCALES_SUFFIX])
        return dense.transpose(-1, -2).float()

    def encode(self, logical: str, value: torch.Tensor, parts: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if self.rewrite_all:
            return {logical: value.to(self.dtype).contiguous()}
        # As the reference: the merged weight is rounded to bfloat16 before it is requantized.
        blocks, scales = quantize(value.to(torch.bfloat16).transpose(-1, -2))
        return {logical + BLOCKS_SUFFIX: blocks, logical + SCALES_SUFFIX: scales}

    def finish_config(self, config: dict) -> dict:
        if self.rewrite_all:
            config.pop("quantization_config", None)
        return config


def codec_for(config: dict, options) -> MxBlockCodec | None:
    quant = config.get("quantization_config")
    method = quant.get("quant_method", "") if isinstance(quant, dict) else ""
    if method == "mxfp8":
        from .errors import MergeError

        # The reference sends mxfp8 through its MXFP4 hook, which misreads one-byte FP8 codes as nibble pairs.
        raise MergeError("config.json quantization_config.quant_method 'mxfp8': MXFP8 bases are not supported "
                         "(only mxfp4, GPT-OSS's format)")
    if method != "mxfp4":
        return None
    return MxBlockCodec(dequantize=bool(options.dequantize), dtype=options.dtype)
