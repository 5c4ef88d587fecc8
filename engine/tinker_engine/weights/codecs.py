"""Stored tensor formats: how a logical weight is read from and written back to a checkpoint's tensors.

A plain tensor (float32 / bfloat16 / float16) is its own logical weight. A quantized format stores one
logical weight as several tensors (MXFP4 `X_blocks` + `X_scales`, FP8 `X.weight` + `X.weight_scale_inv`,
INT4 `X.weight_packed` + `X.weight_scale` + `X.weight_shape`). A `Codec` names those parts, decodes them to
a float32 weight for the merge and encodes the merged weight back, so the shard loop in merge.py adds
deltas to any format the same way: decode -> add the deltas in float32 -> encode.

To add a format: write a Codec and append its factory to FACTORIES; a factory gets the base's config.json
and the merge options and returns a Codec for that base, or None when the format does not apply.
"""

from __future__ import annotations

from typing import Callable, Protocol

import torch


class Codec(Protocol):
    # True: every logical weight of this codec is decoded and re-encoded, merged or not (a dequantized output).
    rewrite_all: bool

    def logical_shapes(self, stored: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
        """The logical weights this codec reads, by name and shape, from the names and shapes on disk."""

    def parts(self, logical: str) -> list[str]:
        """The stored tensors of one logical weight (all are read before decode, wherever they are)."""

    def decode(self, logical: str, parts: dict[str, torch.Tensor]) -> torch.Tensor:
        """The logical weight as float32 (a new tensor: the merge adds to it in place)."""

    def encode(self, logical: str, value: torch.Tensor, parts: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The stored tensors that replace `parts` for the merged float32 `value` (may add or drop names)."""

    def finish_config(self, config: dict) -> dict:
        """config.json of the output (e.g. its quantization_config after a dequantized export)."""


class MergeOptions:
    """What the caller asked for beyond the merge itself; codecs read the fields they understand."""

    def __init__(self, dtype: torch.dtype | None = None, dequantize: bool = False, **extra):
        self.dtype, self.dequantize, self.extra = dtype, dequantize, extra


CodecFactory = Callable[[dict, MergeOptions], "Codec | None"]

# Format factories, tried in order; every one that returns a codec takes part (their parts must not overlap).
FACTORIES: list[CodecFactory] = []


def _quantized_formats() -> list[CodecFactory]:
    # Imported here: the format modules are plain tensor math plus their codec, and need nothing from this one.
    from . import fp8_block, mxfp4, packed_int4

    return [mxfp4.codec_for, packed_int4.codec_for, fp8_block.codec_for]


FACTORIES.extend(_quantized_formats())


def codecs_for(config: dict, options: MergeOptions) -> list[Codec]:
    return [c for c in (f(config, options) for f in FACTORIES) if c is not None]
