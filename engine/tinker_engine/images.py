"""Images in model inputs: image chunks decoded, counted in tokens and fed to a vision-language model.

A ModelInput's image chunk (`{"type": "image", "data", "format", "expected_tokens"}`; protobuf
`Chunk.image`) occupies `n` positions of the sequence. `n` is what the model's image processor
makes of the image: transformers' `smart_resize` to a multiple of `patch_size × merge_size`
within [min_pixels, max_pixels], then `(resized_h / patch_size) · (resized_w / patch_size) /
merge_size²` tokens. The client counts it too (`expected_tokens`); the engine computes it from the
decoded image and refuses a request whose count differs (a 400 naming both), before anything runs.

In the sequence each image chunk becomes `n` `<|image_pad|>` positions (the client's renderer
wraps them in `<|vision_start|>`/`<|vision_end|>` text tokens). At those positions the model reads
the vision tower's features instead of token embeddings, and every position gets Qwen-VL's
multimodal rotary positions (M-RoPE: the model's own `get_rope_index`); the vision tower is frozen
(LoRA trains the language model only) and runs without gradients.

What is refused, with a 400 naming the chunk (`…data[2].model_input.chunks[1]`): bytes that are
not base64 (JSON), not a PNG or JPEG, not of the declared format, undecodable or truncated;
images over `MAX_IMAGE_PIXELS` (the engine's cap, stricter than PIL's decompression-bomb limit,
also refused) or of an aspect ratio over 200 (the processor's limit); a missing or wrong
`expected_tokens`; images sent to a text-only model; image chunks by location
(`image_asset_pointer`).
"""

import binascii
import hashlib
import io
import warnings
from dataclasses import dataclass, field

import numpy as np

from .errors import bad_request

# The image processor of the built-in `tiny-qwen3-vl`, as a preprocessor_config.json would hold it
# (the values of Qwen3-VL's own file, except the pixel bounds, kept small for a tiny model).
# PART OF THE CONTRACT WITH THE CLIENT: the TypeScript client counts an image's tokens
# (`expected_tokens`) with exactly these numbers — an image of W×H takes
#   (resized_h / 16) · (resized_w / 16) / 4 tokens, (resized_h, resized_w) =
#   smart_resize(H, W, factor=32, min_pixels=1024, max_pixels=16384).
# Change them only together with the client.
TINY_QWEN3_VL_PREPROCESSOR = {
    "image_processor_type": "Qwen2VLImageProcessor",
    "patch_size": 16,
    "merge_size": 2,
    "temporal_patch_size": 2,
    "size": {"shortest_edge": 1024, "longest_edge": 16384},  # min_pixels, max_pixels
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
}

# The engine's own cap on an image's pixels (width × height, read from the header before any pixel
# is decoded): 2²⁵ = 33 554 432, e.g. 8192 × 4096. Stricter than PIL's decompression-bomb limit
# (Image.MAX_IMAGE_PIXELS, 89 478 485), which is refused too. An image is resized to at most the
# processor's max_pixels anyway; the cap bounds the memory a request can make the engine decode.
MAX_IMAGE_PIXELS = 1 << 25

FORMATS = {"png": "PNG", "jpeg": "JPEG"}
_MAGIC = [
    (b"\x89PNG\r\n\x1a\n", "PNG"), (b"\xff\xd8\xff", "JPEG"), (b"GIF87a", "GIF"), (b"GIF89a", "GIF"),
    (b"BM", "BMP"), (b"II*\x00", "TIFF"), (b"MM\x00*", "TIFF"), (b"\x00\x00\x01\x00", "ICO"),
]
# The image processors whose token count this engine computes (transformers' Qwen2-VL family,
# which Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3.5 checkpoints name in preprocessor_config.json).
QWEN_VL_PROCESSORS = ("Qwen2VLImageProcessor", "Qwen2VLImageProcessorFast", "Qwen2VLImageProcessorPil")
# Architectures whose images the engine feeds (Qwen-VL's M-RoPE `get_rope_index`, features at
# image-pad positions); other multimodal checkpoints load text-only as before.
VISION_MODEL_TYPES = ("qwen3_vl", "qwen3_5")


# ---------------------------------------------------------------------------------- wire chunks


@dataclass
class ImageChunk:
    """An image chunk as it came off the wire (bytes decoded from base64 for JSON)."""

    data: bytes
    format: str
    expected_tokens: int | None
    where: str  # its path in the request, for messages

    def fingerprint(self) -> list:
        return ["image", hashlib.sha256(self.data).hexdigest(), self.format, self.expected_tokens]


def image_chunk_json(c, where: str) -> ImageChunk:
    """A JSON image chunk (`c` is the chunk's Body)."""
    data = c.raw("data")
    if not isinstance(data, str):
        raise bad_request(f"{where}.data must be a base64 string of the image's bytes")
    try:
        raw = binascii.a2b_base64(data.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as e:
        raise bad_request(f"{where}.data is not valid base64 ({e})") from None
    return ImageChunk(raw, c.str("format", ""), _expected(c.raw("expected_tokens"), where), where)


def _expected(value, where: str):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not value.is_integer()):
        raise bad_request(f"{where}.expected_tokens must be an integer")
    if not 0 <= value < 1 << 31:
        raise bad_request(f"{where}.expected_tokens must be between 0 and 2^31 - 1, got {value}")
    return int(value)


# ------------------------------------------------------------------------------- the processor


class ImageProcessorSpec:
    """A model's image processor, from its preprocessor_config.json (or the built-in's dict):
    the token count of an image and the pixel values its vision tower reads."""

    def __init__(self, config: dict, source: str):
        self.source = source
        self.config = dict(config)
        kind = config.get("image_processor_type") or "Qwen2VLImageProcessor"
        if kind not in QWEN_VL_PROCESSORS:
            raise ValueError(f"image processor {kind!r} of {source} is not one this engine computes "
                             f"({', '.join(QWEN_VL_PROCESSORS)})")
        size = config.get("size") if isinstance(config.get("size"), dict) else {}
        self.patch_size = int(config.get("patch_size", 14))
        self.merge_size = int(config.get("merge_size", 2))
        self.temporal_patch_size = int(config.get("temporal_patch_size", 2))
        self.min_pixels = int(config.get("min_pixels") or size.get("shortest_edge") or 56 * 56)
        self.max_pixels = int(config.get("max_pixels") or size.get("longest_edge") or 28 * 28 * 1280)
        if min(self.patch_size, self.merge_size, self.temporal_patch_size, self.min_pixels, self.max_pixels) < 1:
            raise ValueError(f"image processor of {source} has a non-positive size")
        self._processor = None

    def describe(self) -> dict:
        """What a client needs to count tokens (capabilities)."""
        return {"patch_size": self.patch_size, "merge_size": self.merge_size,
                "temporal_patch_size": self.temporal_patch_size, "min_pixels": self.min_pixels,
                "max_pixels": self.max_pixels}

    def count(self, width: int, height: int) -> tuple:
        """(tokens, (t, h, w) grid of patches) of an image of width × height pixels."""
        from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

        factor = self.patch_size * self.merge_size
        resized_h, resized_w = smart_resize(height, width, factor=factor, min_pixels=self.min_pixels,
                                            max_pixels=self.max_pixels)
        grid = (1, resized_h // self.patch_size, resized_w // self.patch_size)
        return grid[1] * grid[2] // (self.merge_size ** 2), grid

    def processor(self):
        if self._processor is None:
            # transformers' Qwen2VLImageProcessor in its PIL/numpy backend (the default backend
            # needs torchvision): the same resize, rescale, normalisation and patch layout.
            from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

            keys = ("do_resize", "resample", "do_rescale", "rescale_factor", "do_normalize", "image_mean",
                    "image_std", "do_convert_rgb")
            kwargs = {k: self.config[k] for k in keys if k in self.config}
            self._processor = Qwen2VLImageProcessorPil(
                patch_size=self.patch_size, merge_size=self.merge_size, temporal_patch_size=self.temporal_patch_size,
                size={"shortest_edge": self.min_pixels, "longest_edge": self.max_pixels}, **kwargs)
        return self._processor

    def pixel_values(self, rgb: np.ndarray) -> tuple:
        """(pixel_values [patches, C·T·P·P] float32, grid (t, h, w)) of an RGB uint8 image [H, W, 3]."""
        from PIL import Image

        out = self.processor()(images=[Image.fromarray(rgb)], return_tensors="np")
        return np.asarray(out["pixel_values"], dtype=np.float32), tuple(int(x) for x in out["image_grid_thw"][0])


@dataclass
class VisionSpec:
    """What a vision-language base model needs to take images."""

    image_token_id: int
    processor: ImageProcessorSpec | None
    problem: str | None = None  # why its images are refused (no or an unknown image processor)


def vision_spec_for(config, processor_config: dict | None, source: str) -> VisionSpec | None:
    """The VisionSpec of a model config (None for a text-only model or an architecture whose images
    this engine does not feed)."""
    if getattr(config, "model_type", None) not in VISION_MODEL_TYPES or getattr(config, "vision_config", None) is None:
        return None
    image_token_id = int(getattr(config, "image_token_id"))
    if processor_config is None:
        return VisionSpec(image_token_id, None, f"{source} has no preprocessor_config.json (its image processor)")
    try:
        processor = ImageProcessorSpec(processor_config, source)
    except (ValueError, TypeError) as e:
        return VisionSpec(image_token_id, None, str(e))
    vision = config.vision_config
    for name, mine, tower in (("patch_size", processor.patch_size, vision.patch_size),
                              ("merge_size", processor.merge_size, vision.spatial_merge_size),
                              ("temporal_patch_size", processor.temporal_patch_size, vision.temporal_patch_size)):
        if mine != tower:
            return VisionSpec(image_token_id, None, f"the image processor's {name} {mine} of {source} is not the "
                                                    f"vision tower's {tower}")
    return VisionSpec(image_token_id, processor)


# ------------------------------------------------------------------------------------ decoding


@dataclass
class PlacedImage:
    """An image resolved for a model: where it sits in the sequence and what it holds."""

    offset: int  # its first position in the sequence
    tokens: int  # positions it occupies
    grid: tuple  # (t, h, w) patches, as the processor lays them out
    rgb: np.ndarray = field(repr=False)  # decoded, converted to RGB as the processor converts
    processor: ImageProcessorSpec = field(repr=False)
    _pixels: np.ndarray | None = field(default=None, repr=False)

    def pixel_values(self) -> np.ndarray:
        """Computed on first use (on a compute thread, not while the request is answered)."""
        if self._pixels is None:
            pixels, grid = self.processor.pixel_values(self.rgb)
            if grid != self.grid:  # would mean the count and the processor disagree: an engine bug
                raise RuntimeError(f"image processor made a {grid} grid where {self.grid} was counted")
            self._pixels = pixels
        return self._pixels


def _sniff(data: bytes) -> str | None:
    for magic, name in _MAGIC:
        if data.startswith(magic):
            return name
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    return None


def decode_image(chunk: ImageChunk) -> np.ndarray:
    """The chunk's image as an RGB uint8 array [H, W, 3], or a 400 naming what is wrong with it."""
    from PIL import Image, UnidentifiedImageError

    where = chunk.where
    declared = FORMATS.get(chunk.format)
    if declared is None:
        raise bad_request(f"{where}.format must be 'png' or 'jpeg', got {chunk.format!r}")
    if not chunk.data:
        raise bad_request(f"{where}.data is empty (no image bytes)")
    found = _sniff(chunk.data)
    if found is None:
        raise bad_request(f"{where}: the bytes are not a PNG or JPEG image (declared {chunk.format}); cannot decode them")
    if found != declared:
        raise bad_request(f"{where}: the bytes are a {found} image but format says {chunk.format!r}"
                          + ("" if found in FORMATS.values() else "; only PNG and JPEG are accepted"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # the engine's own cap is lower
            image = Image.open(io.BytesIO(chunk.data), formats=[declared])
            width, height = image.size
            if width * height > MAX_IMAGE_PIXELS:
                raise bad_request(
                    f"{where}: image of {width}×{height} = {width * height} pixels is over the engine's cap of "
                    f"{MAX_IMAGE_PIXELS} pixels (stricter than PIL's decompression-bomb limit of "
                    f"{Image.MAX_IMAGE_PIXELS}); downscale it before sending")
            image.load()  # decodes every pixel: a truncated or corrupt file fails here
    except Image.DecompressionBombError as e:
        raise bad_request(f"{where}: image is over PIL's decompression-bomb limit ({e})") from None
    except UnidentifiedImageError:
        raise bad_request(f"{where}: cannot decode the {chunk.format} image (not a valid {declared} file)") from None
    except (OSError, SyntaxError, ValueError, EOFError, MemoryError) as e:
        reason = "truncated" if "truncated" in str(e).lower() else "corrupt or truncated"
        raise bad_request(f"{where}: the {chunk.format} image is {reason}: {type(e).__name__}: {e}") from None
    if width < 1 or height < 1:
        raise bad_request(f"{where}: image has no pixels ({width}×{height})")
    try:
        from transformers.image_transforms import convert_to_rgb

        return np.ascontiguousarray(convert_to_rgb(image, return_numpy=True))
    except Exception as e:  # noqa: BLE001 — a mode the processor cannot convert (e.g. 32-bit float)
        raise bad_request(f"{where}: cannot convert the {image.mode} image to RGB: {type(e).__name__}: {e}") from None


def place_image(chunk: ImageChunk, vision: VisionSpec, model_name: str, offset: int) -> PlacedImage:
    """Decodes and counts one image for a vision model; checks expected_tokens."""
    if vision.processor is None:
        raise bad_request(f"{chunk.where}: model {model_name!r} cannot take images here: {vision.problem}")
    rgb = decode_image(chunk)
    height, width = rgb.shape[:2]
    try:
        tokens, grid = vision.processor.count(width, height)
    except ValueError as e:  # smart_resize: aspect ratio over 200
        raise bad_request(f"{chunk.where}: image of {width}×{height} cannot be processed: {e}") from None
    if chunk.expected_tokens is None:
        raise bad_request(f"{chunk.where}.expected_tokens is missing: set it to the image's token count "
                          f"({tokens} for this {width}×{height} image on model {model_name!r})")
    if chunk.expected_tokens != tokens:
        raise bad_request(
            f"{chunk.where}.expected_tokens is {chunk.expected_tokens} but the {width}×{height} image takes {tokens} "
            f"tokens on model {model_name!r} (resized to {grid[1] * vision.processor.patch_size}×"
            f"{grid[2] * vision.processor.patch_size} pixels, patch {vision.processor.patch_size}, merge "
            f"{vision.processor.merge_size})")
    return PlacedImage(offset, tokens, grid, rgb, vision.processor)


def resolve_chunks(chunks: list, spec, where: str) -> tuple:
    """(tokens int64 [N], [PlacedImage]) of a model input's chunks (token arrays and ImageChunks) for
    the base model `spec`: each image becomes `n` image-pad positions. Text-only models refuse images."""
    images = [c for c in chunks if isinstance(c, ImageChunk)]
    if images and spec.vision is None:
        raise bad_request(f"{images[0].where}: model {spec.name!r} takes no images (a text-only model); "
                          "send images to a vision-language model such as tiny-qwen3-vl")
    parts, placed, offset = [], [], 0
    for c in chunks:
        if isinstance(c, ImageChunk):
            image = place_image(c, spec.vision, spec.name, offset)
            parts.append(np.full(image.tokens, spec.vision.image_token_id, dtype=np.int64))
            placed.append(image)
            offset += image.tokens
        else:
            parts.append(c)
            offset += len(c)
    return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)), placed


def resolve_datums(data: list, spec) -> None:
    """Resolves the image chunks of a forward/forward_backward request's datums in place (a 400 on
    the first bad one; nothing has run by then)."""
    for datum in data:
        if datum.chunks is not None:
            datum.tokens, datum.images = resolve_chunks(datum.chunks, spec, "")
            datum.chunks = None


def image_positions(images: list) -> set:
    return {p for im in images for p in range(im.offset, im.offset + im.tokens)}


# ------------------------------------------------------------------------------- model inputs


def is_vision_model(model) -> bool:
    hf = model.get_base_model() if hasattr(model, "get_base_model") else model
    return getattr(hf.config, "model_type", None) in VISION_MODEL_TYPES and hasattr(getattr(hf, "model", None), "get_rope_index")


def decoder_inputs(hf, ids, rows: list, device) -> tuple:
    """Keyword arguments for the decoder (the language model) of a Qwen-VL model `hf` on a batch
    of right-padded token ids [B, L] whose rows hold the images `rows[b]`, and each row's M-RoPE
    position delta [B, 1] (what decoding adds to text positions after the prompt).

    Positions are [4, B, L]: the sequence index (for the causal mask) and the model's own
    `get_rope_index` (temporal, height, width). The frozen vision tower runs without gradients;
    its features replace the embeddings at image positions (and, with DeepStack, are added to the
    first layers' hidden states there)."""
    import torch

    vl = hf.model
    batch, length = ids.shape
    types = torch.zeros((batch, length), dtype=torch.int32)
    for b, images in enumerate(rows):
        for im in images:
            types[b, im.offset : im.offset + im.tokens] = 1
    flat = [im for images in rows for im in images]
    types = types.to(device)
    mask = types.bool()
    embeds = hf.get_input_embeddings()(ids)
    grid = torch.tensor([im.grid for im in flat], dtype=torch.long, device=device)
    if flat:
        pixels = torch.from_numpy(np.concatenate([im.pixel_values() for im in flat])).to(device)
        with torch.no_grad():
            features = vl.get_image_features(pixels, grid, return_dict=True)
        image_embeds = torch.cat(list(features.pooler_output)).to(embeds.dtype)
        embeds = embeds.masked_scatter(mask[..., None], image_embeds)
        deepstack = getattr(features, "deepstack_features", None) or []
    else:
        deepstack = []
    mrope, deltas = vl.get_rope_index(ids, mm_token_type_ids=types, image_grid_thw=grid if flat else None)
    text = torch.arange(length, device=device).expand(batch, length)
    kwargs = {"inputs_embeds": embeds, "position_ids": torch.cat([text[None], mrope.to(device)])}
    if deepstack:
        kwargs["visual_pos_masks"] = mask
        kwargs["deepstack_visual_embeds"] = [torch.cat(list(f)).to(embeds.dtype) for f in deepstack]
    return kwargs, deltas.to(device).reshape(batch, 1)


def decode_positions(past: int, delta: int, rows: int, device):
    """Position ids [4, rows, 1] of the token decoded after `past` cached positions of a prompt whose
    M-RoPE delta is `delta` (text after the images continues from their largest position)."""
    import torch

    text = torch.full((1, rows, 1), past, dtype=torch.long, device=device)
    return torch.cat([text, (text + delta).expand(3, rows, 1)])
