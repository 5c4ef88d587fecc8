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
# Halfway between consecutive positive FP4 values: a magnitude's code is the number of these below it.
_MIDPOINTS = torch.tensor([(a + b) / 2 for a, b in zip(FP4_VALUES[:7], FP4_VALUES[1:8])], dtype=torch.float32)


def _table(device: torch.device) -> torch.Tensor:
    return torch.tensor(FP4_VALUES, dtype=torch.float32, device=device)


def unpack(blocks: torch.Tensor) -> torch.Tensor:
    """uint8 (..., k) -> float32 (..., 2k): the FP4 values before scaling, low nibble first."""
    table = _table(blocks.device)
    low = table[(blocks & 0x0F).long()]
    high = table[(blocks >> 4).long()]
    return torch.stack((low, high), dim=-1).flatten(-2)


def _nearest_codes(values: torch.Tensor) -> torch.Tensor:
    """The code of the nearest FP4 value, ties to the lower code, as argmin over the table picks it: the
    magnitude's index among the positive codes (a midpoint goes down), plus 8 for a negative value whose
    nearest magnitude is not 0 (0 and -0 both read as code 0)."""
    magnitudes = values.abs().contiguous()
    codes = torch.bucketize(magnitudes, _MIDPOINTS.to(values.device), out_int32=True, right=False).to(torch.uint8)
    return torch.where((values < 0) & (codes > 0), codes + 8, codes)


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

    # Decoded and encoded one expert at a time (every block lies in one expert's rows), so the float32
    # weight the merge needs is the only full-size temporary: whole, the unpacking would take ~5 times that.
    def decode(self, logical: str, parts: dict[str, torch.Tensor]) -> torch.Tensor:
        blocks, scales = parts[logical + BLOCKS_SUFFIX], parts[logical + SCALES_SUFFIX]
        value = torch.empty(dense_shape(tuple(blocks.shape)), dtype=torch.float32)
        flat_value, flat_blocks, flat_scales = (t.reshape(-1, *t.shape[k:]) for t, k in
                                                ((value, -2), (blocks, -3), (scales, -2)))
        for i in range(flat_blocks.shape[0]):
            flat_value[i] = dequantize(flat_blocks[i], flat_scales[i]).transpose(-1, -2)
        return value

    def encode(self, logical: str, value: torch.Tensor, parts: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if self.rewrite_all:
            return {logical: value.to(self.dtype).contiguous()}
        old_blocks, old_scales = parts[logical + BLOCKS_SUFFIX], parts[logical + SCALES_SUFFIX]
        blocks, scales = torch.empty_like(old_blocks), torch.empty_like(old_scales)
        flat_value = value.reshape(-1, *value.shape[-2:])
        flat_blocks, flat_scales = blocks.view(-1, *blocks.shape[-3:]), scales.view(-1, *scales.shape[-2:])
        for i in range(flat_value.shape[0]):
            # As the reference: the merged weight is rounded to bfloat16 before it is requantized.
            flat_blocks[i], flat_scales[i] = quantize(flat_value[i].to(torch.bfloat16).transpose(-1, -2))
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
