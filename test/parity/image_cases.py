"""The reference's image chunks (tinker-cookbook 0.6.1 renderers/base.py `image_to_chunk`, PIL 13,
transformers 5.23) for images.parity.test.ts.

    <reference venv>/bin/python test/parity/image_cases.py < request.json

Run with HF_HUB_CACHE pointing at a hub cache that scripts/hf-image-processors.mjs filled, and
HF_HUB_OFFLINE=1. The request: {"dir": a folder to write the images into, "models": [...],
"sizes": [[w, h], ...]}. It writes the images (generated here, deterministically, beside any the
TypeScript side already put in the folder), then prints one JSON object:

    processors: model -> how its processor was loaded ("via") and, where the reference's own
                get_image_processor could not load it, why ("load_error")
    images:     file name -> PIL's mode, and the reference JPEG's sha256 (the bytes are written
                beside the image as <name>.ref.jpg), or the error PIL raised
    chunks:     file name -> model -> expected_tokens (or the error), from image_to_chunk itself
    counts:     model -> one token count per size (null where the reference refuses it), from the
                count step of image_to_chunk; refusals: model -> the first refusal's message

Where the reference cannot load a model's processor offline, the processor is assembled from the
code transformers 5.23 ships for it, with the values of the cache's preprocessor_config.json, and
passed to the reference's image_to_chunk as it is:

  * Kimi-K2.5/K2.6: the published preprocessor_config.json names remote code
    (kimi_k25_vision_processing.py) that an offline cache does not have. transformers 5.23 ports
    it as Kimi_K25ImageProcessor, whose get_number_of_image_patches (navit_resize) is bound to the
    file's media_proc_cfg values.
  * Nemotron-3.5-Super-VL: the native NemotronH_Omni_Reasoning_V3ImageProcessor has none of the
    three counting methods image_to_chunk looks for; the remote processor's _compute_target_patches
    is its get_patch_grid_size, bound to the file's values.

Both native modules need torchvision for their torchvision backend only, and torchvision (no
release for torch 2.15 on this registry) is not installed: once transformers has found it missing,
a stub module lets the two files import; the counting code never touches it.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import struct
import sys
import types
import zlib
from typing import Any

import numpy as np
from PIL import Image, ImageCms, PngImagePlugin

PINNED = {
    "moonshotai/Kimi-K2.5": "3367c8d1c68584429fab7faf845a32d5195b6ac1",
    "moonshotai/Kimi-K2.6": "b5aabbfb20227ed42becbf5541dbffd213942c58",
    "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16": "533d66230b6e75518bf32d2d7a7b95a24c3dd517",
}

# ------------------------------------------------------------------------------------ the images


def _pixels(rng: np.random.Generator, h: int, w: int, c: int, dtype=np.uint8, top: int = 255) -> np.ndarray:
    """A gradient with noise (JPEG has real work to do), one plane per channel."""
    y = np.linspace(0, top * 0.4, h, dtype=np.float32)[:, None, None]
    x = np.linspace(0, top * 0.6, w, dtype=np.float32)[None, :, None]
    shift = np.arange(c, dtype=np.float32)[None, None, :] * (top / 6)
    noise = rng.integers(-(top // 6), top // 6 + 1, (h, w, c), dtype=np.int32).astype(np.float32)
    a = np.clip(x + y + shift + noise, 0, top).astype(dtype)
    return a if c > 1 else a[..., 0]


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _png(w: int, h: int, depth: int, colour: int, rows: list[bytes], extra: bytes = b"") -> bytes:
    ihdr = struct.pack(">IIBBBBB", w, h, depth, colour, 0, 0, 0)
    idat = zlib.compress(b"".join(b"\x00" + r for r in rows))
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + extra + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


def _pack_bits(values: np.ndarray, depth: int) -> list[bytes]:
    rows = []
    for r in values:
        bits = "".join(format(int(v), f"0{depth}b") for v in r)
        bits += "0" * (-len(bits) % 8)
        rows.append(int(bits, 2).to_bytes(len(bits) // 8, "big") if bits else b"")
    return rows


def _gif(
    screen: tuple[int, int],
    frame: tuple[int, int, int, int],
    indices: np.ndarray,
    global_palette: bytes | None,
    local_palette: bytes | None = None,
    transparency: int | None = None,
    comments: list[list[bytes]] = (),
    interlace: bool = False,
    end_early: bool = False,
) -> bytes:
    """A GIF written by hand, for what PIL's writer never produces: LZW without compression (a
    clear code before the table would widen the codes), any palette, frame placement, comments."""

    def table(p: bytes) -> tuple[int, bytes]:
        n = max(2, (len(p) // 3 - 1).bit_length())
        return n - 1, p + b"\x00" * (3 * (1 << n) - len(p))

    out = bytearray(b"GIF89a" + struct.pack("<HH", *screen))
    if global_palette is not None:
        bits, p = table(global_palette)
        out += bytes([0x80 | bits, 0, 0]) + p
    else:
        out += bytes([0, 0, 0])
    for blocks in comments:
        out += b"\x21\xfe" + b"".join(bytes([len(b)]) + b for b in blocks) + b"\x00"
    if transparency is not None:
        out += b"\x21\xf9\x04" + bytes([1, 0, 0, transparency]) + b"\x00"
    x0, y0, w, h = frame
    flags = 0x40 if interlace else 0
    lp = b""
    if local_palette is not None:
        bits, lp = table(local_palette)
        flags |= 0x80 | bits
    out += b"\x2c" + struct.pack("<HHHH", x0, y0, w, h) + bytes([flags]) + lp
    rows = list(range(h))
    if interlace:
        rows = [y for start, step in ((0, 8), (4, 8), (2, 4), (1, 2)) for y in range(start, h, step)]
    flat = [int(indices[y, x]) for y in rows for x in range(w)]
    if end_early:
        flat = flat[: len(flat) // 2]
    m = max(2, int(max(flat + [1])).bit_length())
    clear, eoi, width = 1 << m, (1 << m) + 1, m + 1
    codes: list[int] = []
    for i in range(0, len(flat), (1 << m) - 2):
        codes.append(clear)
        codes.extend(flat[i : i + (1 << m) - 2])
    codes.append(eoi)
    acc = nbits = 0
    data = bytearray()
    for c in codes:
        acc |= c << nbits
        nbits += width
        while nbits >= 8:
            data.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8
    if nbits:
        data.append(acc & 0xFF)
    out += bytes([m])
    for i in range(0, len(data), 255):
        out += bytes([len(data[i : i + 255])]) + data[i : i + 255]
    out += b"\x00\x3b"
    return bytes(out)


def write_images(folder: str) -> None:
    rng = np.random.default_rng(20240611)
    os.makedirs(folder, exist_ok=True)

    def save(name: str, im: Image.Image, fmt: str, **kw: Any) -> None:
        im.save(os.path.join(folder, name), format=fmt, **kw)

    def raw(name: str, data: bytes) -> None:
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)

    rgb = lambda w, h: Image.fromarray(_pixels(rng, h, w, 3), "RGB")  # noqa: E731
    # sizes and shapes
    for w, h in [(1, 1), (3, 5), (17, 9), (640, 480), (480, 1200), (2000, 50), (200, 1), (1, 300), (1000, 5)]:
        save(f"rgb_{w}x{h}.png", rgb(w, h), "PNG")
    save("huge_4000x3000.jpg", rgb(4000, 3000), "JPEG", quality=90)
    # PNG modes
    save("l_333x211.png", Image.fromarray(_pixels(rng, 211, 333, 1), "L"), "PNG")
    save("la_100x60.png", Image.fromarray(_pixels(rng, 60, 100, 2), "LA"), "PNG")
    save("rgba_201x99.png", Image.fromarray(_pixels(rng, 99, 201, 4), "RGBA"), "PNG")
    palette = rgb(131, 77).quantize(64)
    save("p_131x77.png", palette, "PNG")
    save("p_trns_131x77.png", palette, "PNG", transparency=3)
    save("p_grey_palette.png", Image.fromarray(_pixels(rng, 40, 50, 1), "L").convert("P"), "PNG")
    for depth in (1, 2, 4):
        raw(f"grey{depth}bit.png", _png(37, 11, depth, 0, _pack_bits(rng.integers(0, 2**depth, (11, 37)), depth)))
    raw("p2bit.png", _png(29, 13, 2, 3, _pack_bits(rng.integers(0, 4, (13, 29)), 2), _chunk(b"PLTE", bytes(range(100, 112)))))
    g = _pixels(rng, 30, 40, 1)
    raw("grey_trns.png", _png(40, 30, 8, 0, [r.tobytes() for r in g], _chunk(b"tRNS", struct.pack(">H", int(g[0, 0])))))
    c = _pixels(rng, 30, 40, 3)
    raw("rgb_trns.png", _png(40, 30, 8, 2, [r.tobytes() for r in c], _chunk(b"tRNS", struct.pack(">HHH", *map(int, c[0, 0])))))
    for name, colour, channels in [("grey16", 0, 1), ("rgb16", 2, 3), ("la16", 4, 2), ("rgba16", 6, 4)]:
        a = _pixels(rng, 40, 50, channels, np.uint16, 65535)
        raw(f"{name}.png", _png(50, 40, 16, colour, [r.astype(">u2").tobytes() for r in a]))
    raw("gamma.png", _png(40, 30, 8, 2, [r.tobytes() for r in c], _chunk(b"gAMA", struct.pack(">I", 100000))))
    lab = ImageCms.ImageCmsProfile(ImageCms.createProfile("LAB")).tobytes()
    save("icc_tagged.png", rgb(60, 50), "PNG", icc_profile=lab)
    text = PngImagePlugin.PngInfo()
    text.add_text("comment", "caf\xe9 latin-1")
    save("text_comment.png", rgb(60, 50), "PNG", pnginfo=text)
    itxt = PngImagePlugin.PngInfo()
    itxt.add_itxt("comment", "日本語 comment", zip=True)
    save("itxt_comment.png", rgb(60, 50), "PNG", pnginfo=itxt)
    # JPEG inputs
    photo = rgb(161, 120)
    save("q90.jpg", photo, "JPEG", quality=90)
    save("grey.jpg", Image.fromarray(_pixels(rng, 123, 321, 1), "L"), "JPEG")
    save("progressive.jpg", photo, "JPEG", progressive=True, quality=85)
    save("444.jpg", photo, "JPEG", subsampling=0, quality=95)
    save("restart.jpg", photo, "JPEG", restart_marker_blocks=3)
    save("comment.jpg", photo, "JPEG", comment=b"a jpeg comment")
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: PIL does not rotate, nor does the reference
    save("exif_rotated.jpg", photo, "JPEG", exif=exif.tobytes())
    save("icc_tagged.jpg", photo, "JPEG", icc_profile=lab)
    save("dpi.jpg", photo, "JPEG", dpi=(300, 300))
    save("cmyk.jpg", Image.fromarray(_pixels(rng, 40, 50, 4), "CMYK"), "JPEG")
    # WebP inputs
    save("lossy.webp", rgb(300, 200), "WEBP", quality=80)
    save("lossless_alpha.webp", Image.fromarray(_pixels(rng, 200, 300, 4), "RGBA"), "WEBP", lossless=True)
    save("lossy_alpha.webp", Image.fromarray(_pixels(rng, 64, 80, 4), "RGBA"), "WEBP", quality=70)
    frames = [rgb(50, 40) for _ in range(3)]
    frames[0].save(os.path.join(folder, "animated.webp"), format="WEBP", save_all=True, append_images=frames[1:], duration=100)
    # GIF inputs: PIL's writer (real LZW, interlaced) and hand-written ones
    save("pil.gif", rgb(70, 45).quantize(100), "GIF")
    save("pil_noise.gif", Image.fromarray(rng.integers(0, 256, (200, 300), dtype=np.uint8), "L").convert("P"), "GIF")
    save("pil_trns.gif", rgb(70, 45).quantize(100), "GIF", transparency=5)
    save("pil_comment.gif", rgb(70, 45).quantize(100), "GIF", comment=b"gif comment")
    gframes = [rgb(70, 45).quantize(50) for _ in range(3)]
    gframes[0].save(os.path.join(folder, "animated.gif"), format="GIF", save_all=True, append_images=gframes[1:], duration=100, loop=0)
    pal = bytes(rng.integers(0, 256, 3 * 16, dtype=np.uint8))
    idx = rng.integers(0, 16, (30, 40))
    raw("gif_identity_grey.gif", _gif((40, 30), (0, 0, 40, 30), idx, bytes(b for i in range(16) for b in (i, i, i))))
    raw("gif_small_frame.gif", _gif((60, 50), (7, 5, 40, 30), idx, pal))
    raw("gif_small_frame_trns.gif", _gif((60, 50), (7, 5, 40, 30), idx, pal, transparency=9))
    raw("gif_frame_past_screen.gif", _gif((30, 20), (5, 5, 40, 30), idx, pal))
    raw("gif_local_palette.gif", _gif((40, 30), (0, 0, 40, 30), idx, None, local_palette=pal))
    raw("gif_interlaced.gif", _gif((40, 30), (0, 0, 40, 30), idx, pal, interlace=True))
    raw("gif_comments.gif", _gif((40, 30), (0, 0, 40, 30), idx, pal, comments=[[b"one", b" block"], [b"two"]]))
    raw("gif_ends_early.gif", _gif((40, 30), (0, 0, 40, 30), idx, pal, end_early=True))
    raw("gif_short_palette.gif", _gif((40, 30), (0, 0, 40, 30), rng.integers(0, 8, (30, 40)), pal[:12]))
    # not images, or cut short
    with open(os.path.join(folder, "q90.jpg"), "rb") as f:
        jpeg = f.read()
    raw("truncated.jpg", jpeg[: len(jpeg) // 2])
    with open(os.path.join(folder, "rgb_640x480.png"), "rb") as f:
        png = f.read()
    raw("truncated.png", png[: len(png) * 9 // 10])
    raw("not_an_image.txt", b"hello, not an image\n")
    # checksums: PIL checks the chunks' before the image data, none after
    titled = PngImagePlugin.PngInfo()
    titled.add_text("Title", "x")
    buf = io.BytesIO()
    rgb(30, 20).save(buf, format="PNG", pnginfo=titled)
    good = buf.getvalue()

    def flip_crc(data: bytes, kind: bytes) -> bytes:
        at = data.index(kind) - 4
        end = at + 8 + struct.unpack(">I", data[at : at + 4])[0]
        return data[:end] + bytes([data[end] ^ 1]) + data[end + 1 :]

    raw("bad_crc_before_data.png", flip_crc(good, b"tEXt"))
    raw("bad_crc_image_data.png", flip_crc(good, b"IDAT"))
    late = _chunk(b"tEXt", b"comment\x00after the data")
    late = late[:-1] + bytes([late[-1] ^ 1])
    iend = good.index(b"IEND") - 4
    raw("bad_crc_after_data.png", good[:iend] + late + good[iend:])


# --------------------------------------------------------------------------------- the processors


def _stub_torchvision() -> None:
    import importlib.util

    import transformers  # noqa: F401 - decides torchvision is missing before the stub exists
    import transformers.image_processing_backends  # noqa: F401

    if "torchvision" in sys.modules or importlib.util.find_spec("torchvision") is not None:
        return
    names = ["torchvision", "torchvision.transforms", "torchvision.transforms.v2", "torchvision.transforms.v2.functional"]
    for name in names:
        module = types.ModuleType(name)
        module.__path__ = []  # type: ignore[attr-defined]
        sys.modules[name] = module
    for parent, child in zip(names, names[1:]):
        setattr(sys.modules[parent], child.rsplit(".", 1)[1], sys.modules[child])


def _cached_config(model: str) -> dict:
    from huggingface_hub import hf_hub_download

    path = hf_hub_download(model, "preprocessor_config.json", revision=PINNED.get(model))
    with open(path) as f:
        return json.load(f)


def load_processor(model: str) -> tuple[Any, dict]:
    """The processor image_to_chunk is given for `model`, and how it was obtained."""
    from tinker_cookbook.image_processing_utils import get_image_processor

    if model == "tiny-qwen3-vl":
        from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

        p = Qwen2VLImageProcessorPil(patch_size=16, merge_size=2, temporal_patch_size=2, min_pixels=1024, max_pixels=16384)
        return p, {"via": "Qwen2VLImageProcessorPil(the engine's numbers)"}
    try:
        p = get_image_processor(model)
        return p, {"via": f"get_image_processor: {type(p).__name__}"}
    except Exception as e:  # noqa: BLE001 - recorded: the test says which models the reference cannot load
        load_error = f"{type(e).__name__}: {str(e)[:300]}"
    _stub_torchvision()
    cfg = _cached_config(model)
    if "media_proc_cfg" in cfg:
        from transformers.models.kimi_k25.image_processing_kimi_k25 import Kimi_K25ImageProcessor

        m = cfg["media_proc_cfg"]
        assert m.get("fixed_output_tokens") is None
        side = m["patch_limit_on_one_side"]
        merge = m["merge_kernel_size"][0] if isinstance(m["merge_kernel_size"], list) else m["merge_kernel_size"]
        p = types.SimpleNamespace(size={"max_height": side, "max_width": side}, patch_size=m["patch_size"], merge_size=merge, max_patches=m["in_patch_limit"])
        p.get_number_of_image_patches = functools.partial(Kimi_K25ImageProcessor.get_number_of_image_patches, p)
        return p, {"via": "Kimi_K25ImageProcessor.get_number_of_image_patches with the file's media_proc_cfg", "load_error": load_error}
    from transformers.models.nemotron_h_omni.image_processing_nemotron_h_omni import get_patch_grid_size

    factor = int(round(1.0 / cfg["downsample_ratio"]))
    p = types.SimpleNamespace(_downsample_factor=factor, patch_size=cfg["patch_size"], min_num_patches=cfg["min_num_patches"], max_num_patches=cfg["max_num_patches"], max_model_len=cfg["max_model_len"])

    def compute_target_patches(image: Any, budget: int) -> tuple[int, int]:
        h, w = get_patch_grid_size(image.height, image.width, p.patch_size, factor, p.min_num_patches, budget)
        return w, h

    p._compute_target_patches = compute_target_patches
    return p, {"via": "nemotron_h_omni get_patch_grid_size as _compute_target_patches", "load_error": load_error}


def count_tokens(processor: Any, width: int, height: int) -> int:
    """The count step of image_to_chunk (renderers/base.py), for a size without an image; checked
    against image_to_chunk itself on every image (see main)."""
    if hasattr(processor, "get_number_of_image_patches"):
        return processor.get_number_of_image_patches(height, width, images_kwargs={}) // processor.merge_size**2
    pixel_shuffle = processor._downsample_factor**2
    budget = min((processor.max_model_len - 4) * pixel_shuffle, processor.max_num_patches)
    budget = max(budget, processor.min_num_patches)
    w, h = processor._compute_target_patches(types.SimpleNamespace(width=width, height=height), budget)
    return w * h // pixel_shuffle


def _attempt(fn: Any) -> dict:
    try:
        return {"ok": fn()}
    except Exception as e:  # noqa: BLE001
        return {"error": type(e).__name__, "message": str(e)[:300]}


def main() -> None:
    import warnings

    from tinker_cookbook.renderers.base import image_to_chunk

    warnings.simplefilter("ignore")
    request = json.load(sys.stdin)
    folder = request["dir"]
    write_images(folder)
    processors, loaded = {}, {}
    for model in request["models"]:
        processors[model], loaded[model] = load_processor(model)
    images: dict[str, dict] = {}
    chunks: dict[str, dict] = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".ref.jpg"):
            continue
        path = os.path.join(folder, name)
        try:
            opened: Image.Image | None = Image.open(path)
            images[name] = {"mode": opened.mode}
        except Exception as e:  # noqa: BLE001
            opened = None
            images[name] = {"error": type(e).__name__, "message": str(e)[:300]}
        chunks[name] = {}
        reference: bytes | None = None
        for i, (model, p) in enumerate(processors.items()):
            # The first model's chunk from the file:// URL, as a renderer is given it; the others
            # from the image PIL opened, so that it is decoded once (image_to_chunk takes both).
            source = "file://" + path if i == 0 or opened is None else opened
            out = _attempt(lambda p=p, source=source: image_to_chunk(source, p))
            if "ok" in out:
                chunk = out["ok"]
                data = bytes(chunk.data)
                if reference is None:
                    reference = data
                    with open(path + ".ref.jpg", "wb") as f:
                        f.write(data)
                    images[name]["sha256"] = hashlib.sha256(data).hexdigest()
                assert data == reference, f"{name}: {model}'s chunk has other bytes"
                size = Image.open(path).size
                assert count_tokens(p, *size) == chunk.expected_tokens, f"{name}: count_tokens disagrees with image_to_chunk for {model}"
                out = {"ok": chunk.expected_tokens}
            chunks[name][model] = out
    # Counts: an int, or null where the reference refuses the size (the first refusal's message kept).
    counts: dict[str, list] = {}
    refusals: dict[str, str] = {}
    for model, p in processors.items():
        row = []
        for w, h in request["sizes"]:
            try:
                row.append(count_tokens(p, w, h))
            except Exception as e:  # noqa: BLE001
                row.append(None)
                refusals.setdefault(model, f"{w}x{h}: {type(e).__name__}: {e}")
        counts[model] = row
    sys.stdout.write(json.dumps({"processors": loaded, "images": images, "chunks": chunks, "counts": counts, "refusals": refusals}))


if __name__ == "__main__":
    main()
