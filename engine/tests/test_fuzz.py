"""Fuzz: seeded, mutated bodies sent to every route of the engine.

Every route declared in server.py gets valid bodies turned bad — truncated, fields swapped for other
types, huge and non-finite numbers, deep nesting, wrong content types, random bytes, huge arrays
that still fit the size limit, odd unicode — over one keep-alive connection. The engine must answer
each with a 2xx/3xx/4xx (a 4xx with a JSON `detail`), never a 5xx, never a hang, never a reset
connection; afterwards it is alive, logged no internal error, and a model created before the fuzz
(never addressed by a request that could be valid) computes bitwise what it did before, with its
checkpoint files unchanged.
"""

import base64
import gzip
import hashlib
import io
import http.client
import json
import random
import re
import socket
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from conftest import ENGINE_DIR, EngineProcess
from http_client import API_KEY, Client, corpus, datum
from tinker_engine import proto_schema as pb

SEED = 20250611
MAX_BODY_MB = 2
REQUEST_TIMEOUT_S = 30  # a request not answered by then counts as a hang (long polls last 5 s)
VALUE_MUTATIONS_PER_ROUTE = 14
API = "/api/v1"


# ------------------------------------------------------------------------ routes of the engine


def declared_routes() -> set:
    """(METHOD, path template) of every route the engine's modules declare, read from their
    `@app.<method>(API + "...")` decorators (server.py and modules that add routes to the app)."""
    found = set()
    for module in sorted((ENGINE_DIR / "tinker_engine").glob("*.py")):
        source = module.read_text()
        pattern = r'@app\.(get|post|put|delete)\((?:f"\{API\}|API \+ "|self\.api \+ ")([^"]+)"'
        for method, path in re.findall(pattern, source):
            found.add((method.upper(), path))
    assert len(found) > 30, f"the route pattern no longer matches the engine's modules ({len(found)} found)"
    return found


# ------------------------------------------------------------------------------- mutations


class Raw:
    """A JSON token that json.dumps cannot write (1e400, -Infinity, 10**400 written as text...)."""

    def __init__(self, text: str):
        self.text = text


def dumps(value) -> bytes:
    raws = []

    def default(o):
        if isinstance(o, Raw):
            raws.append(o.text)
            return f"__RAW_{len(raws) - 1}__"
        raise TypeError(type(o))

    text = json.dumps(value, default=default)
    for i, raw in enumerate(raws):
        text = text.replace(f'"__RAW_{i}__"', raw)
    return text.encode()


def nested(depth: int, leaf=0, kind="list"):
    value = leaf
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


REPLACEMENTS = [
    None, True, False, 0, -1, 1, 0.5, -0.0, "", "x", "🦆", "\u0000", "\ud800", "a\u202eb", "../../etc/passwd",
    [], {}, [None], {"": None}, [1, "x", None], {"type": "x"},
    Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), Raw("1e400"), Raw("-1e400"), Raw("1" + "0" * 400),
    2**31, 2**53 + 1, 2**63 - 1, 2**63, -(2**63) - 1, 2**64, 1e308, -1e308, 5e-324,
]


def leaf_paths(value, prefix=()):
    """Every position in a JSON value (the root excluded) as a path of keys/indices."""
    out = []
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return out
    for k, v in items:
        out.append(prefix + (k,))
        out.extend(leaf_paths(v, prefix + (k,)))
    return out


def replaced(value, path, new):
    if not path:
        return new
    if isinstance(value, dict):
        return {k: (replaced(v, path[1:], new) if k == path[0] else v) for k, v in value.items()}
    return [replaced(v, path[1:], new) if i == path[0] else v for i, v in enumerate(value)]


def dropped(value, path):
    if len(path) == 1:
        if isinstance(value, dict):
            return {k: v for k, v in value.items() if k != path[0]}
        return [v for i, v in enumerate(value) if i != path[0]]
    key = path[0]
    if isinstance(value, dict):
        return {k: (dropped(v, path[1:]) if k == key else v) for k, v in value.items()}
    return [dropped(v, path[1:]) if i == key else v for i, v in enumerate(value)]


def body_mutations(rng: random.Random, template: dict):
    """(label, body bytes, headers) for one JSON template: each a request no valid client sends,
    or a valid request with one field swapped for something else."""
    text = dumps(template)
    json_h = {"Content-Type": "application/json"}
    out = []
    for cut in sorted(rng.sample(range(1, len(text)), min(3, len(text) - 1))):
        out.append((f"truncated at byte {cut}", text[:cut], json_h))
    out += [
        ("deep list 100000", b"[" * 100_000 + b"]" * 100_000, json_h),
        ("deep object 5000", b'{"a":' * 5000 + b"1" + b"}" * 5000, json_h),
        ("unclosed deep list", b"[" * 50_000, json_h),
        ("random bytes", rng.randbytes(rng.choice([1, 7, 300, 5000])), json_h),
        ("invalid utf-8", b'{"session_id": "\xff\xfe\xfd"}', json_h),
        ("utf-16 body", json.dumps(template).encode("utf-16"), json_h),
        ("a list, not an object", b"[1, 2]", json_h),
        ("a string, not an object", b'"body"', json_h),
        ("null body", b"null", json_h),
        ("1e400 body", b"1e400", json_h),
        ("whitespace body", b" \n\t ", json_h),
        ("text/plain", text, {"Content-Type": "text/plain"}),
        ("protobuf content type on JSON", text, {"Content-Type": "application/x-protobuf"}),
        ("form content type", b"a=1&b=2", {"Content-Type": "application/x-www-form-urlencoded"}),
        ("gzip-encoded JSON", gzip.compress(text), {**json_h, "Content-Encoding": "gzip"}),
        ("duplicate keys", text[:-1] + b', "seq_id": "dup", "seq_id": -5}' if text.endswith(b"}") else text, json_h),
        ("unknown fields", dumps({**template, "zz_unknown": {"nested": [1, 2, {"x": None}]}}), json_h),
        ("huge array within the limit", dumps({**template, "pad": list(range(100_000))}), json_h),
        ("long unicode string", dumps({**template, "pad": "é🦆" * 40_000}), json_h),
    ]
    paths = leaf_paths(template)
    if paths:
        picks = [rng.choice(paths) for _ in range(VALUE_MUTATIONS_PER_ROUTE)]
        for path in picks:
            new = rng.choice(REPLACEMENTS)
            label = f"{'.'.join(map(str, path))} = {new.text if isinstance(new, Raw) else repr(new)[:40]}"
            out.append((label, dumps(replaced(template, path, new)), json_h))
        deep_at = rng.choice(paths)
        out.append((f"{'.'.join(map(str, deep_at))} nested 65 deep", dumps(replaced(template, deep_at, nested(65))), json_h))
        out.append((f"{'.'.join(map(str, deep_at))} nested 900 deep",
                    dumps(replaced(template, deep_at, nested(900, kind="dict"))), json_h))
        out.append((f"{'.'.join(map(str, deep_at))} a 60000-element array",
                    dumps(replaced(template, deep_at, [rng.randrange(-(2**40), 2**40) for _ in range(60_000)])), json_h))
        gone = rng.choice(paths)
        out.append((f"{'.'.join(map(str, gone))} removed", dumps(dropped(template, gone)), json_h))
    return out


def import_mutations(rng: random.Random, valid: bytes):
    """(label, body) for the checkpoint import: a valid archive cut, bit-flipped, re-labelled, or noise."""
    out = [(f"archive truncated at byte {cut}", valid[:cut]) for cut in sorted(rng.sample(range(1, len(valid)), 4))]
    for i in range(4):
        flipped = bytearray(valid)
        for _ in range(1 + 3 * i):
            pos = rng.randrange(min(len(flipped), 4096))  # the headers and the start of the first member
            flipped[pos] ^= 1 << rng.randrange(8)
        out.append((f"archive with {1 + 3 * i} bit(s) flipped in its first 4 KiB", bytes(flipped)))
    out += [
        ("random bytes", rng.randbytes(5000)),
        ("a tar's end marker only", bytes(1024)),
        ("gzip of the archive", gzip.compress(valid)),
        ("the archive twice", valid + valid),
        ("member names swapped", valid.replace(b"adapter_config.json", b"adapter_config.jsoN")),
        ("a member renamed upward", valid.replace(b"adapter_config.json", b"../dapter_config.json")),
    ]
    return out


def proto_mutations(rng: random.Random, valid: bytes):
    h = {"Content-Type": "application/x-protobuf"}
    out = [(f"protobuf truncated at byte {cut}", valid[:cut], h) for cut in sorted(rng.sample(range(1, len(valid)), 4))]
    for i in range(6):
        flipped = bytearray(valid)
        for _ in range(1 + i):
            pos = rng.randrange(len(flipped))
            flipped[pos] ^= 1 << rng.randrange(8)
        out.append((f"protobuf with {1 + i} bit(s) flipped", bytes(flipped), h))
    out += [
        ("protobuf random bytes", rng.randbytes(512), h),
        ("protobuf, gzip content-encoding", valid, {**h, "Content-Encoding": "gzip"}),
        ("protobuf bytes as JSON", valid, {"Content-Type": "application/json"}),
        ("protobuf huge shape", huge_shape_proto(), h),
    ]
    return out


def png_image(seed: int) -> bytes:
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, (50, 70, 3), dtype=np.uint8)  # 4 tokens on tiny-qwen3-vl
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def image_mutations(rng: random.Random, image: bytes, build):
    """(label, body) of an otherwise valid image request whose image is damaged: `build(data, format,
    expected_tokens)` makes the request's body."""
    out = [(f"image truncated at byte {cut}", build(image[:cut], "png", 4)) for cut in sorted(rng.sample(range(1, len(image)), 4))]
    for i in range(4):
        flipped = bytearray(image)
        for _ in range(1 + 2 * i):
            flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
        out.append((f"image with {1 + 2 * i} bit(s) flipped", build(bytes(flipped), "png", 4)))
    out += [
        ("image: random bytes", build(rng.randbytes(300), "png", 4)),
        ("image: no bytes", build(b"", "png", 4)),
        ("image: png declared jpeg", build(image, "jpeg", 4)),
        ("image: format bmp", build(image, "bmp", 4)),
        ("image: expected_tokens 5", build(image, "png", 5)),
        ("image: expected_tokens missing", build(image, "png", None)),
        ("image: expected_tokens 2**31 - 1", build(image, "png", 2**31 - 1)),
        ("image: a header claiming 60000 x 60000", build(image[:16] + (60000).to_bytes(4, "big") * 2 + image[24:], "png", 4)),
    ]
    return out


def image_proto(model_id: str, seq_id: int, data: bytes, fmt: str, expected) -> bytes:
    msg = pb.ForwardBackwardRequest(model_id=model_id, seq_id=seq_id, loss_fn="cross_entropy")
    d = msg.data.add()
    d.model_input.add().encoded_text.tokens = np.asarray([5, 151652], dtype="<i4").tobytes()
    image = d.model_input.add().image
    image.data, image.format = data, fmt
    if expected is not None:
        image.expected_tokens = expected
    d.model_input.add().encoded_text.tokens = np.asarray([151653], dtype="<i4").tobytes()
    for name, dtype, values in (("target_tokens", pb.DTYPE_INT64, [151652, 0, 0, 0, 0, 151653, 6]),
                                ("weights", pb.DTYPE_FLOAT32, [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0])):
        t = d.loss_fn_inputs[name]
        t.dtype = dtype
        t.dense = np.asarray(values, dtype="<i8" if dtype == pb.DTYPE_INT64 else "<f4").tobytes()
        t.shape.append(7)
    return msg.SerializeToString()


def huge_shape_proto() -> bytes:
    msg = pb.ForwardBackwardRequest(model_id="x", seq_id=1, loss_fn="cross_entropy")
    d = msg.data.add()
    d.model_input.add().encoded_text.tokens = bytes(16)
    t = d.loss_fn_inputs["weights"]
    t.dtype = pb.DTYPE_FLOAT32
    t.dense = bytes(16)
    t.shape.extend([2**62, 2**62])
    return msg.SerializeToString()


PATH_PARAMS = [
    "x", "", "%20", "..", "%2E%2E%2F%2E%2E", "%00", "%F0%9F%A6%86", "%ED%A0%80", "a%2Fb", "9" * 400,
    "%C3%A9" * 50, "-1", "1e400", "NaN", "tml-x:train:0", "{}", "%25", "x" * 4000,
]
QUERIES = ["", "?limit=-1", "?limit=abc", "?limit=1e400", f"?limit={10**30}&offset={10**30}", "?offset=-5",
           "?limit=%00", "?limit=1&limit=2", "?" + "a=1&" * 500]


# ---------------------------------------------------------------------------------- the client


class Conn:
    """One keep-alive connection: a reset shows up as the failure of the request that met it."""

    def __init__(self, port: int):
        self.port = port
        self.conn = self._open()

    def _open(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT_S)

    def send(self, method: str, path: str, body: bytes | None, headers: dict):
        h = {"X-API-Key": API_KEY, **headers}
        started = time.monotonic()
        try:
            chunked = body is not None and not isinstance(body, bytes)
            self.conn.request(method, path, body=body, headers=h, encode_chunked=chunked)
            r = self.conn.getresponse()
            data = r.read()
            return r.status, data, time.monotonic() - started, None
        except (socket.timeout, TimeoutError) as e:
            problem = f"no answer within {REQUEST_TIMEOUT_S} s ({type(e).__name__})"
        except (ConnectionError, http.client.HTTPException, OSError) as e:
            problem = f"connection failed: {type(e).__name__}: {e}"
        self.conn.close()
        self.conn = self._open()
        return None, b"", time.monotonic() - started, problem


def checkpoint_digest(directory: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir()) if p.is_file()}


# ------------------------------------------------------------------------------------ the test


@pytest.fixture(scope="module")
def fuzz_engine(tmp_path_factory):
    proc = EngineProcess(tmp_path_factory.mktemp("fuzz") / "data", "--max-body-mb", str(MAX_BODY_MB)).start()
    yield proc
    proc.stop()


def test_mutated_bodies_on_every_route(fuzz_engine):
    started = time.monotonic()
    c = Client(fuzz_engine.url)
    rng = random.Random(SEED)

    # The model that must come out of the fuzz unchanged: no fuzzed request could address it validly.
    keep_sid = c.session()
    keep = c.create_model(keep_sid, 0, seed=3)
    keep_data = [datum(s) for s in corpus(2, 16, 600)]
    c.forward_backward(keep, 1, keep_data)
    c.optim_step(keep, 2, lr=5e-2)
    keep_ckpt = c.done(c.ok("save_weights", {"model_id": keep, "seq_id": 3, "path": "kept"})["request_id"])["path"]
    probe = [datum(corpus(1, 20, 640)[0])]
    before = c.forward_logprobs(keep, 4, probe)
    keep_dir = fuzz_engine.data_dir / "runs" / keep / "weights" / "kept"
    keep_files = checkpoint_digest(keep_dir)

    # What the fuzzed requests address: their own session, models, checkpoints and sampler.
    sid = c.session()
    spare_sid = c.session()
    model = c.create_model(sid, 0, seed=1, rank=2)
    throwaway = c.create_model(sid, 1, seed=1, rank=2)
    ckpt = c.done(c.ok("save_weights", {"model_id": model, "seq_id": 1, "path": "f1"})["request_id"])["path"]
    c.done(c.ok("save_weights", {"model_id": model, "seq_id": 2, "path": "doomed"})["request_id"])
    sampler_ckpt = c.done(c.ok("save_weights_for_sampler", {"model_id": model, "seq_id": 3, "path": "s1"})[
        "request_id"])["path"]
    sampler = c.ok("create_sampling_session", {"session_id": sid, "sampling_session_seq_id": 0,
                                               "model_path": sampler_ckpt})["sampling_session_id"]
    done_future = c.ok("optim_step", {"model_id": model, "seq_id": 4, "adam_params": {"learning_rate": 0.0}})["request_id"]
    c.done(done_future)

    fb_data = [datum([5, 6, 7, 8, 9, 10])]
    proto = pb.ForwardBackwardRequest(model_id=model, seq_id=20, loss_fn="cross_entropy")
    d = proto.data.add()
    d.model_input.add().encoded_text.tokens = bytes(bytearray(b"".join(t.to_bytes(4, "little") for t in [5, 6, 7, 8, 9])))
    for name, dtype, values in (("target_tokens", pb.DTYPE_INT64, [6, 7, 8, 9, 10]),
                                ("weights", pb.DTYPE_FLOAT32, [1.0] * 5)):
        t = d.loss_fn_inputs[name]
        t.dtype = dtype
        t.dense = np.asarray(values, dtype="<i8" if dtype == pb.DTYPE_INT64 else "<f4").tobytes()
        t.shape.append(5)
    proto_valid = proto.SerializeToString()

    post = {
        "/client/config": {"sdk_version": "0.38.0", "user_metadata": {"a": "b"}},
        "/client/dynamic_config": {"sdk_version": "0.38.0"},
        "/create_session": {"tags": ["fuzz"], "user_metadata": {"k": "v"}, "sdk_version": "fuzz"},
        "/session_heartbeat": {"session_id": sid},
        "/sessions/{session_id}/finish": {"reason": {"type": "success"}, "detail": "done"},
        "/save_weights_external": {"model_id": model, "seq_id": 50, "path": "ext"},
        "/copy_weights": {"source": ckpt, "destination": "x"},
        "/create_custom_loss": {"name": "x", "code": "return 0"},
        "/telemetry": {"events": [{"event": "x", "ts": 1.5, "props": {"a": [1, 2]}}]},
        "/create_model": {"session_id": sid, "model_seq_id": 7, "base_model": "tiny-qwen3",
                          "lora_config": {"rank": 2, "seed": 0, "train_mlp": True}, "user_metadata": {"a": "b"},
                          "optimizer_config": {"type": "adamw"}},
        "/get_info": {"model_id": model},
        "/unload_model": {"model_id": throwaway},
        "/forward_backward": {"model_id": model, "seq_id": 21, "forward_backward_input": {
            "data": fb_data, "loss_fn": "cross_entropy", "loss_fn_config": None}},
        "/forward": {"model_id": model, "seq_id": 22, "forward_input": {"data": fb_data, "loss_fn": "cross_entropy"}},
        "/optim_step": {"model_id": model, "seq_id": 23, "adam_params": {
            "learning_rate": 1e-3, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.0, "grad_clip_norm": 1.0}},
        "/save_weights": {"model_id": model, "seq_id": 24, "path": "f2", "ttl_seconds": 3600, "overwrite": True},
        "/save_weights_for_sampler": {"model_id": model, "seq_id": 25, "path": "s2", "sampling_session_seq_id": 5,
                                      "ttl_seconds": 60},
        "/load_weights": {"model_id": model, "seq_id": 26, "path": ckpt, "optimizer": True},
        "/weights_info": {"tinker_path": ckpt},
        "/create_sampling_session": {"session_id": sid, "sampling_session_seq_id": 9, "base_model": "tiny-qwen3",
                                     "model_path": sampler_ckpt},
        "/asample": {"sampling_session_id": sampler, "seq_id": 1, "num_samples": 2,
                     "prompt": {"chunks": [{"type": "encoded_text", "tokens": [1, 2, 3]}]},
                     "sampling_params": {"max_tokens": 3, "temperature": 0.7, "top_p": 0.9, "top_k": 5, "seed": 1,
                                         "stop": ["\n"]},
                     "prompt_logprobs": True, "topk_prompt_logprobs": 2},
        "/retrieve_future": {"request_id": done_future, "allow_metadata_only": False},
    }
    # A second shape of two routes: create-via-load and direct (session-less) sampling.
    extra_post = {
        "/load_weights": {"session_id": sid, "model_seq_id": 8, "path": ckpt, "optimizer": False},
        "/asample": {"model_path": sampler_ckpt, "seq_id": 2, "prompt": {"chunks": [{"tokens": [4, 5]}]},
                     "sampling_params": {"max_tokens": 2, "seed": 3}},
    }
    # Images (tiny-qwen3-vl): a datum and a prompt with an image chunk, mutated as above, and the
    # image's own bytes damaged in JSON and in protobuf.
    vl_model = c.create_model(sid, 2, "tiny-qwen3-vl", seed=1, rank=2)
    vl_sampler = c.ok("create_sampling_session", {"session_id": sid, "sampling_session_seq_id": 10,
                                                  "base_model": "tiny-qwen3-vl"})["sampling_session_id"]
    image = png_image(SEED)

    def image_chunk(data, fmt="png", expected=4):
        chunk = {"type": "image", "data": base64.b64encode(data).decode(), "format": fmt}
        return chunk if expected is None else {**chunk, "expected_tokens": expected}

    def image_fb(data, fmt="png", expected=4, seq_id=30):
        return {"model_id": vl_model, "seq_id": seq_id, "forward_backward_input": {"loss_fn": "cross_entropy", "data": [{
            "model_input": {"chunks": [{"type": "encoded_text", "tokens": [5, 151652]}, image_chunk(data, fmt, expected),
                                       {"type": "encoded_text", "tokens": [151653]}]},
            "loss_fn_inputs": {"target_tokens": {"data": [151652, 0, 0, 0, 0, 151653, 6], "dtype": "int64"},
                               "weights": {"data": [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0], "dtype": "float32"}}}]}}

    def image_sample(data, fmt="png", expected=4):
        return {"sampling_session_id": vl_sampler, "prompt_logprobs": True, "sampling_params": {"max_tokens": 2, "seed": 1},
                "prompt": {"chunks": [{"type": "encoded_text", "tokens": [151652]}, image_chunk(data, fmt, expected)]}}

    image_post = [("/forward_backward", image_fb(image)), ("/asample", image_sample(image)),
                  ("/forward_backward", {**image_fb(image), "model_id": model})]  # (a text-only model)

    get = {
        "/healthz": None, "/get_server_capabilities": None, "/training_runs": None, "/checkpoints": None,
        "/sessions": None, "/training_runs/{run_id}": model, "/training_runs/{run_id}/checkpoints": model,
        "/sessions/{session_id}": sid, "/samplers/{sampler_id:path}": sampler, "/debug/training_requests": None,
    }
    ttl_route = "/training_runs/{run_id}/checkpoints/{kind}/{name}/ttl"
    delete_route = "/training_runs/{run_id}/checkpoints/{kind}/{name}"
    archive_route = "/training_runs/{run_id}/checkpoints/{kind}/{name}/archive"

    covered = {("POST", p) for p in post} | {("GET", p) for p in get} | {
        ("PUT", ttl_route), ("DELETE", delete_route), ("GET", archive_route), ("POST", "/import_checkpoint")}
    missing = declared_routes() - covered
    assert not missing, f"routes without a fuzz template (add one): {sorted(missing)}"

    requests = []  # (method, url path, body, headers, label)
    for route, template in list(post.items()) + list(extra_post.items()) + image_post:
        path = route.replace("{session_id}", spare_sid)
        for label, body, headers in body_mutations(rng, template):
            requests.append(("POST", API + path, body, headers, label))
    for label, body, headers in proto_mutations(rng, proto_valid) + proto_mutations(rng, image_proto(vl_model, 40, image, "png", 4)):
        requests.append(("POST", API + "/forward_backward", body, headers, label))
    json_h, proto_h = {"Content-Type": "application/json"}, {"Content-Type": "application/x-protobuf"}
    # (Each with a seq id of its own, so that the image is judged, not the reuse of a seq id.)
    seq_ids = iter(range(100, 1000))
    for label, body in image_mutations(rng, image, lambda *a: dumps(image_fb(*a, seq_id=next(seq_ids)))):
        requests.append(("POST", API + "/forward_backward", body, json_h, f"json {label}"))
    for label, body in image_mutations(rng, image, lambda *a: dumps(image_sample(*a))):
        requests.append(("POST", API + "/asample", body, json_h, f"sample {label}"))
    for label, body in image_mutations(rng, image, lambda *a: image_proto(vl_model, next(seq_ids), *a)):
        requests.append(("POST", API + "/forward_backward", body, proto_h, f"protobuf {label}"))
    for route, param in get.items():
        if param is None:
            for q in QUERIES:
                requests.append(("GET", API + route + q, None, {}, f"query {q[:40]!r}"))
            continue
        name = re.search(r"\{([^}:]+)", route).group(1)
        for value in PATH_PARAMS + [urllib.parse.quote(param, safe="")]:
            url = API + re.sub(r"\{[^}]+\}", value, route)
            requests.append(("GET", url, None, {}, f"{name} = {value[:40]!r}"))
    for value in PATH_PARAMS:
        for kind, name in (("weights", value), (value, "f1"), ("sampler_weights", "s1")):
            run = value if kind == "sampler_weights" else model
            requests.append(("DELETE", f"{API}/training_runs/{run}/checkpoints/{kind}/{name}", None, {},
                             f"delete {run[:20]}/{kind[:20]}/{name[:20]}"))
    for value in PATH_PARAMS:
        for kind, name in (("weights", value), (value, "f1"), ("weights", "f1")):
            run = value if (kind, name) == ("weights", "f1") else model
            requests.append(("GET", f"{API}/training_runs/{run}/checkpoints/{kind}/{name}/archive", None, {},
                             f"archive {run[:20]}/{kind[:20]}/{name[:20]}"))
    requests.append(("GET", f"{API}/training_runs/{model}/checkpoints/weights/f1/archive", None, {}, "valid archive"))
    for rest in ["", "x", "a/b/c.tar", f"{model}/weights/f1.tar", f"{model}/weights/f1.tar?expires=1e400&signature=%00",
                 f"{model}/weights/f1.tar?expires={2**70}&signature=" + "0" * 64, "%ED%A0%80/..%2F/x.tar", "a/" * 300]:
        for method in ("GET", "HEAD", "POST"):
            requests.append((method, f"{API}/checkpoint_archives/{rest}", None, {}, f"signed download {rest[:40]!r}"))
    ttl_path = f"{API}/training_runs/{model}/checkpoints/weights/f1/ttl"
    for label, body, headers in body_mutations(rng, {"ttl_seconds": 3600}):
        requests.append(("PUT", ttl_path, body, headers, label))
    for value in PATH_PARAMS[:8]:
        requests.append(("PUT", f"{API}/training_runs/{model}/checkpoints/{value}/f1/ttl", b'{"ttl_seconds": 5}',
                         {"Content-Type": "application/json"}, f"ttl kind {value!r}"))
    requests.append(("DELETE", f"{API}/training_runs/{model}/checkpoints/weights/doomed", None, {}, "valid delete"))
    # The checkpoint import: a tar body (this engine's own archive of s1), mutated, under fuzzed query strings.
    run, kind, name = sampler_ckpt[len("tinker://"):].split("/")
    with urllib.request.urlopen(c.get(f"training_runs/{run}/checkpoints/{kind}/{name}/archive").json()["url"]) as r:
        valid_tar = r.read()
    for label, body in import_mutations(rng, valid_tar):
        target = urllib.parse.quote(f"tinker://fuzz-import/sampler_weights/{len(requests)}", safe="")
        requests.append(("POST", f"{API}/import_checkpoint?tinker_path={target}", body,
                         {"Content-Type": "application/x-tar"}, f"import: {label}"))
    for value in PATH_PARAMS:
        for query in (f"tinker_path={value}", f"tinker_path=tinker://{value}/weights/x",
                      f"tinker_path=tinker://r/sampler_weights/{value}", f"tinker_path=tinker://r/weights/x&ttl_seconds={value}"):
            requests.append(("POST", f"{API}/import_checkpoint?{query}", valid_tar[:600], {"Content-Type": "application/x-tar"},
                             f"import query {query[:50]!r}"))
    for label, body, headers in body_mutations(rng, {"tinker_path": sampler_ckpt}):
        requests.append(("POST", f"{API}/import_checkpoint?tinker_path=tinker://fuzz-import/weights/j", body, headers,
                         f"import, a JSON body: {label}"))
    # Bodies over the limit, announced and streamed (chunked): 413, and the connection still works.
    too_big = b'{"pad": "' + b"x" * (MAX_BODY_MB << 20) + b'"}'
    requests.append(("POST", API + "/telemetry", too_big, {"Content-Type": "application/json"}, "over the size limit"))
    requests.append(("POST", API + "/optim_step", iter([too_big[: 1 << 20], too_big[1 << 20 :]]),
                     {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}, "over the limit, chunked"))
    # Requests to the kept model that are invalid whatever else they hold.
    for label, body in (
        ("nan learning rate", {"model_id": keep, "seq_id": 1000, "adam_params": {"learning_rate": Raw("NaN")}}),
        ("seq id 1e400", {"model_id": keep, "seq_id": Raw("1e400"), "adam_params": {"learning_rate": 1.0}}),
        ("seq id 2**64", {"model_id": keep, "seq_id": 2**64, "adam_params": {"learning_rate": 1.0}}),
        ("deep adam params", {"model_id": keep, "seq_id": 1001, "adam_params": nested(200, kind="dict")}),
    ):
        requests.append(("POST", API + "/optim_step", dumps(body), {"Content-Type": "application/json"}, label))
    requests.append(("POST", API + "/forward_backward", dumps(
        {"model_id": keep, "seq_id": 1002, "forward_backward_input": {"data": [{
            "model_input": {"chunks": [{"tokens": [1, 2, Raw("1" + "0" * 40)]}]},
            "loss_fn_inputs": {"target_tokens": {"data": [1, 2, 3], "dtype": "int64"}}}]}}),
        {"Content-Type": "application/json"}, "kept model: token id 10**40"))

    conn = Conn(fuzz_engine.port)
    failures, statuses = [], {}
    previous, slowest = "(first request)", (0.0, "")
    for method, path, body, headers, label in requests:
        status, data, took, problem = conn.send(method, path, body, headers)
        where = f"{method} {path[:90]} [{label[:100]}]"
        statuses[status] = statuses.get(status, 0) + 1
        slowest = max(slowest, (took, where))
        if problem is not None:
            failures.append(f"{where}: {problem} (previous request: {previous})")
        elif status >= 500:
            failures.append(f"{where}: {status} {data[:300]!r}")
        elif status >= 400 and status != 408 and method != "HEAD":  # (a HEAD answer has no body)
            try:
                detail = json.loads(data)["detail"]
                assert isinstance(detail, str) and detail
            except Exception:  # noqa: BLE001
                failures.append(f"{where}: {status} without a JSON detail: {data[:200]!r}")
        previous = where
    assert not failures, f"{len(failures)} of {len(requests)} fuzzed requests failed:\n" + "\n".join(failures[:40])

    # Alive, and the kept model computes exactly what it did (the probe also runs after every
    # training request the fuzz queued, so the log below covers their execution).
    assert c.get("healthz").status == 200
    assert c.forward_logprobs(keep, 5, probe) == before
    assert checkpoint_digest(keep_dir) == keep_files
    assert c.ok("weights_info", {"tinker_path": keep_ckpt})["lora_rank"] == 4
    log = fuzz_engine.log_path.read_text(errors="replace")
    assert "Traceback" not in log and "unhandled error" not in log, log[-4000:]
    elapsed = time.monotonic() - started
    print(f"{len(requests)} fuzzed requests, statuses {dict(sorted(statuses.items(), key=str))}, {elapsed:.1f} s "
          f"(slowest {slowest[0]:.2f} s: {slowest[1][:120]})")


def test_nesting_and_size_limits_are_400_and_413_on_a_live_connection(fuzz_engine):
    """The two limits by name: each answered cleanly, and the same connection serves the next request."""
    conn = Conn(fuzz_engine.port)
    json_h = {"Content-Type": "application/json"}
    cases = [
        (b"[" * 100_000 + b"]" * 100_000, json_h, 400, "nested deeper than 64 levels"),
        (dumps({"model_id": "m", "adam_params": nested(65, kind="dict")}), json_h, 400, "nested deeper than 64 levels"),
        (b'{"pad": "' + b"x" * (MAX_BODY_MB << 20) + b'"}', json_h, 413, "larger than"),
        (iter([b'{"pad": "', b"x" * (MAX_BODY_MB << 20), b'"}']), {**json_h, "Transfer-Encoding": "chunked"}, 413,
         "larger than"),
    ]
    for body, headers, status, needle in cases:
        got, data, _, problem = conn.send("POST", API + "/optim_step", body, headers)
        assert problem is None and got == status and needle in json.loads(data)["detail"], (got, data[:200], problem)
        # Same connection, next request: answered (a reset would fail it).
        got, data, _, problem = conn.send("GET", API + "/healthz", None, {})
        assert problem is None and got == 200, (got, problem)
    # At the limit's edge a deep-but-allowed body is parsed and judged on its content.
    got, data, _, _ = conn.send("POST", API + "/optim_step", dumps({"model_id": "m", "x": nested(60)}), json_h)
    assert got == 404 and "unknown model" in json.loads(data)["detail"], data
