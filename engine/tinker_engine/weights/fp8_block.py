"""FP8 (float8_e4m3fn) block-wise quantization: DeepSeek V3's native weights and the experts-FP8 output.

Native DeepSeek V3/V3.1 checkpoints (config.json quantization_config.quant_method "fp8") store a Linear
weight `X.weight` as float8_e4m3fn plus `X.weight_scale_inv` (float32, one per 128x128 block, or
quantization_config.weight_block_size): value = fp8 * scale_inv. The reference's experts-FP8 output
(quantize="experts-fp8", serving_format="vllm") writes routed experts the same way under compressed-tensors'
name `X.weight_scale` and describes them in config.json's compression_config.

Numbers follow the reference (tinker_cookbook.weights._export._quantized): scale_inv = max|block| / 448
(floored at 1e-12), values multiplied by 1 / scale_inv, clamped to +-448 and cast; edges that do not fill
a block are zero-padded for the maximum; dequantized to bfloat16.
"""

from __future__ import annotations

import torch

BLOCK = (128, 128)
FP8_DTYPE = torch.float8_e4m3fn
FP8_MAX = float(torch.finfo(FP8_DTYPE).max)
NATIVE_SCALE_SUFFIX = ".weight_scale_inv"
OUTPUT_SCALE_SUFFIX = ".weight_scale"
QUANTIZE_CHOICES = ("experts-fp8",)
SERVING_FORMATS = ("vllm",)
DEEPSEEK_MODEL_TYPES = ("deepseek_v3",)


def _blocks(padded: torch.Tensor, block: tuple[int, int]) -> torch.Tensor:
    rows, cols = padded.shape
    return padded.reshape(rows // block[0], block[0], cols // block[1], block[1]).permute(0, 2, 1, 3)


def _padded(tensor: torch.Tensor, block: tuple[int, int], dtype: torch.dtype) -> torch.Tensor:
    rows, cols = tensor.shape
    pad_rows, pad_cols = -rows % block[0], -cols % block[1]
    if not pad_rows and not pad_cols:
        return tensor
    padded = torch.zeros(rows + pad_rows, cols + pad_cols, dtype=dtype, device=tensor.device)
    padded[:rows, :cols] = tensor
    return padded


def quantize(weight: torch.Tensor, block: tuple[int, int] = BLOCK) -> tuple[torch.Tensor, torch.Tensor]:
    """A 2-D weight -> (float8_e4m3fn weight, float32 scale_inv of ceil(rows/b0) x ceil(cols/b1))."""
    if weight.ndim != 2:
        raise ValueError(f"FP8 block quantization takes a 2-D weight, got shape {tuple(weight.shape)}")
    rows, cols = weight.shape
    blocks = _blocks(_padded(weight, block, weight.dtype), block)
    scale_inv = blocks.abs().flatten(-2).amax(dim=-1).clamp(min=1e-12) / FP8_MAX
    scaled = (blocks.float() * (1.0 / scale_inv[..., None, None])).clamp(-FP8_MAX, FP8_MAX)
    whole = scaled.permute(0, 2, 1, 3).reshape(blocks.shape[0] * block[0], blocks.shape[1] * block[1])
    return whole[:rows, :cols].to(FP8_DTYPE), scale_inv.float()


def dequantize(weight: torch.Tensor, scale_inv: torch.Tensor, block: tuple[int, int] = BLOCK,
               dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """(fp8 weight, scale_inv) -> the 2-D weight in `dtype` (bfloat16 as the reference)."""
    if weight.ndim != 2:
        raise ValueError(f"FP8 block dequantization takes a 2-D weight, got shape {tuple(weight.shape)}")
    rows, cols = weight.shape
    blocks = _blocks(_padded(weight.float(), block, torch.float32), block) * scale_inv[..., None, None]
    whole = blocks.permute(0, 2, 1, 3).reshape(blocks.shape[0] * block[0], blocks.shape[1] * block[1])
    return whole[:rows, :cols].to(dtype)


def quantize_stacked(weight: torch.Tensor, block: tuple[int, int] = BLOCK) -> tuple[torch.Tensor, torch.Tensor]:
    """2-D as quantize; a fused 3-D expert tensor (experts, out, in) one expert at a time."""
    if weight.ndim == 2:
        return quantize(weight, block)
    parts = [quantize(expert, block) for expert in weight]
    return torch.stack([p[0] for p in parts]), torch.stack([p[1] for p in parts])


def is_native_fp8(config: dict) -> bool:
    quant = config.get("quantization_config")
    return isinstance(quant, dict) and quant.get("quant_method", "") == "fp8"


def native_block(config: dict) -> tuple[int, int]:
    quant = config.get("quantization_config")
    size = quant.get("weight_block_size", list(BLOCK)) if isinstance(quant, dict) else list(BLOCK)
    return (int(size[0]), int(size[1]))


def is_deepseek(config: dict) -> bool:
    return config.get("model_type") in DEEPSEEK_MODEL_TYPES


def is_routed_expert(key: str) -> bool:
    """A routed expert's tensor (`.mlp.experts.`), not a shared expert's: what experts-fp8 quantizes."""
    return ".mlp.experts." in key and ".mlp.shared_experts." not in key


def is_skipped_key(key: str) -> bool:
    """Keys the experts-FP8 export leaves out: derived rotary frequencies, DeepSeek's unused layer 61
    (its multi-token-prediction layer) and the native scales it replaces."""
    if key.endswith(".rotary_emb.inv_freq") or key.endswith(NATIVE_SCALE_SUFFIX):
        return True
    parts = key.split(".")
    return any(p == "layers" and i + 1 < len(parts) and parts[i + 1] == "61" for i, p in enumerate(parts))


def output_scale_key(weight_key: str) -> str:
    return weight_key.removesuffix(".weight") + OUTPUT_SCALE_SUFFIX


def vllm_compression_config(weight_keys: list[str] | set[str]) -> dict:
    """config.json's compression_config for vLLM: FP8 128x128 block weights, dynamic per-tensor FP8
    activations; every `.weight` module without a `.weight_scale` beside it is ignored."""
    quantized = {k.removesuffix(OUTPUT_SCALE_SUFFIX) for k in weight_keys if k.endswith(OUTPUT_SCALE_SUFFIX)}
    ignore = [k.removesuffix(".weight") for k in sorted(weight_keys)
              if k.endswith(".weight") and k.removesuffix(".weight") not in quantized]
    fp8 = {"num_bits": 8, "type": "float", "symmetric": True}
    return {
        "config_groups": {"group_0": {
            "targets": ["Linear"],
            "weights": {**fp8, "strategy": "block", "block_structure": list(BLOCK), "dynamic": False},
            "input_activations": {**fp8, "strategy": "tensor", "dynamic": True},
        }},
        "format": "float-quantized",
        "global_compression_ratio": None,
        "ignore": ignore,
        "quantization_status": "compressed",
        "quant_method": "compressed-tensors",
    }


def _weight_of_scale(key: str) -> str:
    return key.removesuffix(NATIVE_SCALE_SUFFIX) + ".weight"


class Fp8BlockCodec:
    """FP8 block-wise weights. Three outputs:

    native      (a native FP8 base, no options) merged weights are requantized with the base's own block
                size into `X.weight` / `X.weight_scale_inv`; the rest stays as it is. The reference has no
                such mode (it adds deltas straight onto the FP8 codes, with a warning).
    dequantize  every FP8 weight is written in bfloat16 (or the requested dtype) without its scale, and
                config.json loses its quantization_config. (The reference refuses dequantize without
                quantize; this is the same dequantization its experts-fp8 path starts with.)
    experts-fp8 (quantize="experts-fp8", serving_format="vllm") the reference's export: native FP8 weights
                are dequantized to bfloat16, merged, and routed experts requantized with 128x128 blocks
                into `X.weight` / `X.weight_scale`, everything else left in bfloat16 (or its own dtype);
                derived rotary frequencies and layer 61 are dropped; config.json gets vLLM's
                compression_config in place of quantization_config.
    """

    def __init__(self, mode: str, native: tuple[int, int] | None, dtype: torch.dtype | None = None):
        self.mode, self.native, self.dtype = mode, native, dtype or torch.bfloat16
        self.rewrite_all = mode != "native"
        self.stored: dict[str, tuple[int, ...]] = {}

    def _native_pair(self, key: str) -> bool:
        return self.native is not None and key.endswith(".weight") and key.removesuffix(".weight") + NATIVE_SCALE_SUFFIX in self.stored

    def logical_shapes(self, stored: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
        self.stored = dict(stored)
        found = {k: s for k, s in stored.items() if self._native_pair(k)}
        if self.mode == "experts-fp8":
            for key, shape in stored.items():
                if key in found or (key.endswith(NATIVE_SCALE_SUFFIX) and _weight_of_scale(key) in found):
                    continue
                if is_skipped_key(key) or is_routed_expert(key):
                    found[key] = shape
        return found

    def parts(self, logical: str) -> list[str]:
        if self._native_pair(logical):
            return [logical, logical.removesuffix(".weight") + NATIVE_SCALE_SUFFIX]
        return [logical]

    def decode(self, logical: str, parts: dict[str, torch.Tensor]) -> torch.Tensor:
        if self._native_pair(logical) and not is_skipped_key(logical):
            weight, scale_inv = (parts[p] for p in self.parts(logical))
            if weight.dtype == FP8_DTYPE:
                return dequantize(weight, scale_inv, self.native).float()
        if is_skipped_key(logical) and self.mode == "experts-fp8":
            return torch.empty(0)
        return parts[logical].float()

    def _source_dtype(self, logical: str, parts: dict[str, torch.Tensor]) -> torch.dtype:
        stored = parts[logical].dtype
        return torch.bfloat16 if stored == FP8_DTYPE else stored

    def encode(self, logical: str, value: torch.Tensor, parts: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if self.mode == "native":
            weight, scale_inv = quantize(value, self.native)
            return {logical: weight, self.parts(logical)[1]: scale_inv}
        if self.mode == "dequantize":
            return {logical: value.to(self.dtype)}
        if is_skipped_key(logical):
            return {}
        # The reference merges in the tensor's own dtype (bfloat16 after dequantizing) and quantizes that.
        value = value.to(self._source_dtype(logical, parts))
        if is_routed_expert(logical) and value.ndim in (2, 3):
            weight, scale = quantize_stacked(value)
            return {logical: weight, output_scale_key(logical): scale}
        return {logical: value}

    def output_keys(self) -> list[str]:
        keys = []
        for key, shape in self.stored.items():
            if is_skipped_key(key):
                continue
            keys.append(key)
            if is_routed_expert(key) and len(shape) in (2, 3):
                keys.append(output_scale_key(key))
        return keys

    def finish_config(self, config: dict) -> dict:
        if self.mode == "dequantize":
            config.pop("quantization_config", None)
        elif self.mode == "experts-fp8":
            config["compression_config"] = vllm_compression_config(self.output_keys())
            config.pop("quantization_config", None)
        return config


def check_options(options, config: dict) -> str | None:
    """The experts-FP8 options as the reference validates them; returns the quantize choice."""
    from .errors import MergeError

    extra = getattr(options, "extra", {}) or {}
    quantize_choice, serving = extra.get("quantize"), extra.get("serving_format")
    if quantize_choice is not None and quantize_choice not in QUANTIZE_CHOICES:
        raise MergeError(f"quantize {quantize_choice!r} is not supported (choose from: {', '.join(QUANTIZE_CHOICES)})")
    if serving is not None and serving not in SERVING_FORMATS:
        raise MergeError(f"serving_format {serving!r} is not supported (choose from: {', '.join(SERVING_FORMATS)})")
    if quantize_choice is not None and serving is None:
        raise MergeError(f"quantize {quantize_choice!r} needs serving_format (e.g. 'vllm') to write its scale metadata")
    if serving is not None and quantize_choice is None:
        raise MergeError(f"serving_format {serving!r} needs quantize (e.g. 'experts-fp8')")
    if quantize_choice is not None and options.dtype not in (None, torch.bfloat16):
        raise MergeError(f"quantize {quantize_choice!r} needs dtype bfloat16, got {str(options.dtype).removeprefix('torch.')}")
    if quantize_choice is not None:
        from .mxfp4 import is_mx_block
        from .packed_int4 import is_pack_quantized

        if is_mx_block(config) or is_pack_quantized(config):
            raise MergeError(f"quantize {quantize_choice!r}: config.json quantization_config "
                             f"{(config.get('quantization_config') or config.get('text_config', {}).get('quantization_config'))!r} "
                             "is already a quantized format; experts-fp8 starts from bfloat16 or native FP8 weights")
    return quantize_choice


def codec_for(config: dict, options) -> Fp8BlockCodec | None:
    quantize_choice = check_options(options, config)
    native = native_block(config) if is_native_fp8(config) else None
    if quantize_choice == "experts-fp8":
        return Fp8BlockCodec("experts-fp8", native)
    if native is None:
        return None
    return Fp8BlockCodec("dequantize" if options.dequantize else "native", native, options.dtype)
