"""Request decoding and result encoding for both dialects: JSON (all SDKs) and protobuf (0.25)."""

import hashlib
import json
import math
from dataclasses import dataclass, field

import numpy as np

from . import proto_schema as pb
from .body import Body
from .errors import bad_request
from .images import ImageChunk, image_chunk_json

_DTYPES = {"float32": np.float32, "int64": np.int64}
_PROTO_DTYPES = {pb.DTYPE_FLOAT32: np.float32, pb.DTYPE_INT64: np.int64, pb.DTYPE_INT32: np.int32}


@dataclass
class Datum:
    tokens: np.ndarray  # int64, shape (N,)
    inputs: dict = field(default_factory=dict)  # name -> np.ndarray (float32 or int64)
    # SDK 0.38 provenance (protobuf only): (kind, sequence_id, offset, length) runs tiling the input
    # tokens and target_tokens; both or neither (stability.py checks them).
    input_spans: list | None = None
    target_spans: list | None = None
    # A model input with image chunks: its chunks (int64 token arrays and ImageChunks) until they are
    # resolved for the model (images.resolve_datums: tokens then count each image as its n positions).
    chunks: list | None = None
    images: list = field(default_factory=list)  # images.PlacedImage, once resolved


@dataclass
class ForwardRequest:
    data: list
    loss_fn: str
    loss_fn_config: dict
    forward_only: bool
    # SDK 0.38: loss_fn_config values may be text (only `custom`'s loss_id so far); kept apart so
    # that the built-in losses only ever see numbers.
    loss_fn_text: dict = field(default_factory=dict)
    custom: object = None  # the CustomLoss a `custom` request runs (resolved at submission)

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        kind = "forward" if self.forward_only else "forward_backward"
        header = [kind, self.loss_fn, sorted(self.loss_fn_config.items())]
        if self.loss_fn_text:  # (only then, so that other requests keep their fingerprints)
            header.append(sorted(self.loss_fn_text.items()))
        h.update(json.dumps(header).encode())
        for datum in self.data:
            h.update(b"|d")
            if datum.chunks is not None:  # (only then: text-only datums keep their fingerprints)
                h.update(json.dumps(["|chunks", chunks_fingerprint(datum.chunks)]).encode())
            h.update(datum.tokens.astype("<i8").tobytes())
            for name in sorted(datum.inputs):
                arr = datum.inputs[name]
                h.update(f"|{name}:{arr.dtype.str}:{arr.shape}".encode())
                h.update(np.ascontiguousarray(arr).tobytes())
            if datum.input_spans is not None or datum.target_spans is not None:  # (only then: old fingerprints hold)
                h.update(json.dumps(["|spans", datum.input_spans, datum.target_spans]).encode())
        return h.hexdigest()


def chunks_fingerprint(chunks: list) -> list:
    return [c.fingerprint() if isinstance(c, ImageChunk) else c.tolist() for c in chunks]


def join_text(chunks: list) -> np.ndarray | None:
    """The tokens of chunks without images (None when one is an image)."""
    if any(isinstance(c, ImageChunk) for c in chunks):
        return None
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)


def _unserved_chunk(kind, where: str):
    if kind == "image_asset_pointer":
        return bad_request(f"{where}: image_asset_pointer chunks (images by location) are not served by this engine; "
                           "send the image's bytes in an image chunk")
    if kind == "dmel":
        return bad_request(f"{where}: dmel (audio) chunks are not served by this engine")
    return bad_request(f"{where}: chunk type {kind!r} is not supported (encoded_text or image)")


def fingerprint_json(kind: str, payload) -> str:
    return hashlib.sha256(json.dumps([kind, payload], sort_keys=True).encode()).hexdigest()


# ---------------------------------------------------------------------------------------- JSON


# Most elements a sparse tensor may expand to (a dense float32 copy of 256 MiB).
MAX_DENSE_ELEMENTS = 1 << 26


def _densify_csr(values, crow, col, shape, where):
    if not isinstance(shape, list) or len(shape) != 2 or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise bad_request(f"{where}: sparse tensors need a 2-D shape of non-negative integers")
    rows, cols = shape
    if rows * cols > MAX_DENSE_ELEMENTS:
        raise bad_request(f"{where}: sparse tensor shape {shape} is too large (more than {MAX_DENSE_ELEMENTS} elements)")
    try:
        crow = np.asarray(crow, dtype=np.int64)
        col = np.asarray(col, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        raise bad_request(f"{where}: sparse CSR indices must be flat lists of integers") from None
    if crow.shape != (rows + 1,) or col.shape != values.shape or crow[0] != 0 or crow[-1] != len(values):
        raise bad_request(f"{where}: inconsistent sparse CSR indices")
    if np.any(np.diff(crow) < 0) or (len(col) and (col.min() < 0 or col.max() >= cols)):
        raise bad_request(f"{where}: sparse CSR indices out of range")
    dense = np.zeros((rows, cols), dtype=values.dtype)
    row_of = np.repeat(np.arange(rows), np.diff(crow))
    dense[row_of, col] = values
    return dense


def _check_shape(arr, shape, where):
    if shape is None:
        return arr
    if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise bad_request(f"{where}.shape must be a list of non-negative integers")
    needed = math.prod(shape)  # Python ints: no overflow
    if needed != arr.size:
        raise bad_request(f"{where}: data has {arr.size} elements but shape {shape} needs {needed}")
    return arr.reshape(shape)


def parse_tensor_json(obj, where: str) -> np.ndarray:
    b = Body(obj, where)
    dtype_name = b.str("dtype", "float32")
    if dtype_name not in _DTYPES:
        raise bad_request(f"{where}.dtype must be 'float32' or 'int64', got {dtype_name!r}")
    data = b.list("data")
    try:
        arr = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise bad_request(f"{where}.data must be a flat list of numbers") from None
    if arr.ndim != 1:
        raise bad_request(f"{where}.data must be a flat list of numbers")
    if dtype_name == "int64":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise bad_request(f"{where}: int64 tensor has non-integer values")
        try:
            arr = np.asarray(data, dtype=np.int64)
        except OverflowError:
            raise bad_request(f"{where}: int64 tensor has values outside the 64-bit range") from None
    else:
        arr = arr.astype(np.float32)
    shape = b.raw("shape")
    if b.has("sparse_crow_indices") or b.has("sparse_col_indices"):
        if shape is None:
            raise bad_request(f"{where}: sparse tensors require a shape")
        return _densify_csr(arr, b.list("sparse_crow_indices"), b.list("sparse_col_indices"), shape, where)
    return _check_shape(arr, shape, where)


def parse_chunks_json(model_input, where: str) -> list:
    """A JSON ModelInput's chunks: int64 token arrays and ImageChunks (image bytes base64-decoded)."""
    chunks = Body(model_input, where).list("chunks")
    parts = []
    for j, chunk in enumerate(chunks):
        cw = f"{where}.chunks[{j}]"
        c = Body(chunk, cw)
        kind = c.str("type", None)
        if kind is None:
            if c.has("tokens"):
                kind = "encoded_text"
            elif c.has("location"):
                kind = "image_asset_pointer"
            elif c.has("dmel"):
                kind = "dmel"
            elif c.has("data"):
                kind = "image"
        if kind == "image":
            parts.append(image_chunk_json(c, cw))
            continue
        if kind != "encoded_text":
            raise _unserved_chunk(kind, cw)
        tokens = c.list("tokens")
        if not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
            raise bad_request(f"{cw}.tokens must be a list of integers")
        try:
            parts.append(np.asarray(tokens, dtype=np.int64))
        except OverflowError:
            raise bad_request(f"{cw}.tokens contains a token id outside the 64-bit range") from None
    return parts


def datum_input(chunks: list) -> dict:
    """Datum fields for parsed chunks: the tokens of text-only input, else the chunks to resolve."""
    tokens = join_text(chunks)
    if tokens is None:
        return {"tokens": np.zeros(0, dtype=np.int64), "chunks": chunks}
    return {"tokens": tokens}


def parse_datum_json(obj, where: str) -> Datum:
    b = Body(obj, where)
    chunks = parse_chunks_json(b.raw("model_input"), f"{where}.model_input") if b.has("model_input") else None
    if chunks is None:
        raise bad_request(f"missing required field '{where}.model_input'")
    inputs_obj = b.raw("loss_fn_inputs", {})
    if not isinstance(inputs_obj, dict):
        raise bad_request(f"{where}.loss_fn_inputs must be an object")
    inputs = {k: parse_tensor_json(v, f"{where}.loss_fn_inputs.{k}") for k, v in inputs_obj.items()}
    return Datum(inputs=inputs, **datum_input(chunks))


def parse_loss_fn_config(raw, where: str) -> tuple:
    """(numbers, texts) of a JSON loss_fn_config."""
    if raw is None:
        return {}, {}
    if not isinstance(raw, dict):
        raise bad_request(f"{where} must be an object of numbers (or strings)")
    numbers, texts = {}, {}
    for k, v in raw.items():
        if isinstance(v, str):
            texts[k] = v
        elif isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise bad_request(f"{where}.{k} must be a finite number")
        else:
            numbers[k] = float(v)
    return numbers, texts


def parse_forward_json(body: Body, wrapper: str, forward_only: bool) -> ForwardRequest:
    inner = body.obj(wrapper)
    data = inner.list("data")
    datums = [parse_datum_json(d, f"{wrapper}.data[{i}]") for i, d in enumerate(data)]
    numbers, texts = parse_loss_fn_config(inner.raw("loss_fn_config"), f"{wrapper}.loss_fn_config")
    return ForwardRequest(
        data=datums,
        loss_fn=inner.str("loss_fn", "cross_entropy"),
        loss_fn_config=numbers,
        forward_only=forward_only,
        loss_fn_text=texts,
    )


# -------------------------------------------------------------------------------------- protobuf


def _frombuffer(raw: bytes, dtype, where: str) -> np.ndarray:
    itemsize = np.dtype(dtype).itemsize
    if len(raw) % itemsize:
        raise bad_request(f"{where}: byte length {len(raw)} is not a multiple of {itemsize}")
    return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype)


def parse_tensor_proto(msg, where: str) -> np.ndarray:
    dtype = _PROTO_DTYPES.get(msg.dtype)
    if dtype is None:
        raise bad_request(f"{where}: unsupported tensor dtype enum {msg.dtype}")
    shape = list(msg.shape) or None
    if msg.WhichOneof("encoding") == "sparse_csr":
        csr = msg.sparse_csr
        values = _frombuffer(csr.values, dtype, where)
        crow = _frombuffer(csr.crow_indices, np.int64, where)
        col = _frombuffer(csr.col_indices, np.int64, where)
        if shape is None:
            raise bad_request(f"{where}: sparse tensors require a shape")
        arr = _densify_csr(values, crow, col, shape, where)
    else:
        arr = _check_shape(_frombuffer(msg.dense, dtype, where), shape, where)
    if arr.dtype == np.int32:
        arr = arr.astype(np.int64)
    return arr


def _spans_proto(spans) -> list:
    out = []
    for span in spans:
        kind = span.WhichOneof("span")
        arm = span.prompt_tokens if kind == "prompt_tokens" else span.sampled_tokens
        out.append(("prompt" if kind == "prompt_tokens" else "sampled", arm.sequence_id, int(arm.offset), int(arm.length)))
    return out


def _image_chunk_proto(image, where: str) -> ImageChunk:
    if image.HasField("override_dimensions"):
        raise bad_request(f"{where}.override_dimensions is not served by this engine (the image's own size is used)")
    expected = image.expected_tokens if image.HasField("expected_tokens") else None
    if expected is not None and expected < 0:
        raise bad_request(f"{where}.expected_tokens must be >= 0, got {expected}")
    return ImageChunk(bytes(image.data), image.format, expected, where)


def parse_forward_backward_proto(raw: bytes):
    msg = pb.ForwardBackwardRequest()
    try:
        msg.ParseFromString(raw)
    except Exception as e:  # protobuf raises DecodeError or others on garbage
        raise bad_request(f"malformed protobuf ForwardBackwardRequest: {e}") from None
    datums = []
    for i, d in enumerate(msg.data):
        where = f"data[{i}]"
        parts = []
        for j, chunk in enumerate(d.model_input):
            kind = chunk.WhichOneof("chunk")
            cw = f"{where}.model_input[{j}]"
            if kind == "image":
                parts.append(_image_chunk_proto(chunk.image, cw))
            elif kind == "encoded_text":
                parts.append(_frombuffer(chunk.encoded_text.tokens, np.int32, cw).astype(np.int64))
            else:
                raise _unserved_chunk(kind, cw)
        inputs = {k: parse_tensor_proto(v, f"{where}.loss_fn_inputs.{k}") for k, v in d.loss_fn_inputs.items()}
        datums.append(Datum(
            inputs=inputs, **datum_input(parts),
            input_spans=_spans_proto(d.model_input_spans) if len(d.model_input_spans) or len(d.loss_fn_input_spans) else None,
            target_spans=_spans_proto(d.loss_fn_input_spans) if len(d.model_input_spans) or len(d.loss_fn_input_spans) else None,
        ))
    numbers, texts = {k: float(v) for k, v in msg.loss_fn_config.items()}, {}
    if msg.loss_fn_config_v2:
        # SDK 0.38 puts every entry in v2 (floats are mirrored in the legacy map, text is not).
        numbers = {}
        for k, v in msg.loss_fn_config_v2.items():
            if v.WhichOneof("value") == "text":
                texts[k] = v.text
            elif v.WhichOneof("value") == "number" and math.isfinite(v.number):
                numbers[k] = float(v.number)
            else:
                raise bad_request(f"loss_fn_config_v2.{k} must be a finite number or a string")
    req = ForwardRequest(
        data=datums,
        loss_fn=msg.loss_fn or "cross_entropy",
        loss_fn_config=numbers,
        forward_only=msg.forward_only,
        loss_fn_text=texts,
    )
    return msg.model_id, msg.seq_id, req


# -------------------------------------------------------------------------------------- results


def _dtype_name(arr: np.ndarray) -> str:
    return "int64" if np.issubdtype(arr.dtype, np.integer) else "float32"


def _finite_or_none(x: float):
    return x if math.isfinite(x) else None


def forward_output_json(result: dict) -> dict:
    outputs = []
    for per_datum in result["loss_fn_outputs"]:
        outputs.append(
            {
                name: {"data": arr.reshape(-1).tolist(), "dtype": _dtype_name(arr), "shape": list(arr.shape)}
                for name, arr in per_datum.items()
            }
        )
    return {
        "loss_fn_output_type": result["loss_fn_output_type"],
        "loss_fn_outputs": outputs,
        "metrics": result["metrics"],
    }


def forward_output_proto(result: dict) -> bytes:
    msg = pb.ForwardBackwardOutput()
    msg.loss_fn_output_type = result["loss_fn_output_type"]
    for k, v in result["metrics"].items():
        msg.metrics[k] = float(v)
    outputs = result["loss_fn_outputs"]
    if outputs:
        record = msg.loss_fn_outputs.add()
        record.type_tag = result["loss_fn_output_type"]
        record.num_datums = len(outputs)
        for name in outputs[0]:
            arrays = [per_datum[name] for per_datum in outputs]
            is_int = np.issubdtype(arrays[0].dtype, np.integer)
            np_dtype = np.dtype("<i8") if is_int else np.dtype("<f4")
            blobs = [np.ascontiguousarray(a, dtype=np_dtype).tobytes() for a in arrays]
            offsets = np.cumsum([0] + [len(b) for b in blobs]).astype("<i8")
            bt = record.fields[name]
            bt.data = b"".join(blobs)
            bt.offsets = offsets.tobytes()
            bt.dtype = pb.DTYPE_INT64 if is_int else pb.DTYPE_FLOAT32
            bt.trailing_shape.extend(list(arrays[0].shape[1:]))
    return msg.SerializeToString()


def sample_output_json(result: dict) -> dict:
    out = {
        "type": "sample",
        "sequences": [
            {"tokens": s["tokens"], "logprobs": s["logprobs"], "stop_reason": s["stop_reason"]}
            for s in result["sequences"]
        ],
        "prompt_logprobs": result.get("prompt_logprobs"),
        "topk_prompt_logprobs": result.get("topk_prompt_logprobs"),
    }
    # SDK 0.38's additions, only when asked for (older JSON clients never see them).
    for seq, s in zip(out["sequences"], result["sequences"]):
        if "topk_logprobs" in s:
            seq["topk_logprobs"] = s["topk_logprobs"]
    target = result.get("target_prompt_logprobs")
    if target is not None:
        out["target_prompt_logprobs"] = _tensor_json(target["data"], "float32", target["shape"], target)
    alt = result.get("prompt_alt_tokens")
    if alt is not None:
        shape = _alt_shape(alt)
        out["prompt_alt_tokens"] = {
            "tokens": _tensor_json([t for row in alt["tokens"] for t in row], "int64", shape),
            "logprobs": _tensor_json([v for row in alt["logprobs"] for v in row], "float32", shape),
        }
    return out


def _tensor_json(data: list, dtype: str, shape: list, layout: dict | None = None) -> dict:
    out = {"data": data, "dtype": dtype, "shape": shape}
    if layout is not None and layout.get("crow") is not None:
        out["sparse_crow_indices"], out["sparse_col_indices"] = layout["crow"], layout["col"]
    return out


def _alt_shape(alt: dict) -> list:
    rows = alt["tokens"]
    return [len(rows), len(rows[0]) if rows else 0]


TOPK_EMPTY_TOKEN = 0
TOPK_EMPTY_LOGPROB = -99999.0


def sample_output_proto(result: dict) -> bytes:
    msg = pb.SampleResponse()
    for s in result["sequences"]:
        seq = msg.sequences.add()
        seq.stop_reason = pb.STOP_REASON_STOP if s["stop_reason"] == "stop" else pb.STOP_REASON_LENGTH
        seq.tokens = np.asarray(s["tokens"], dtype="<i4").tobytes()
        if s["logprobs"] is not None:
            seq.logprobs = np.asarray(s["logprobs"], dtype="<f4").tobytes()
    prompt_logprobs = result.get("prompt_logprobs")
    if prompt_logprobs is not None:
        values = [float("nan") if v is None else v for v in prompt_logprobs]
        msg.prompt_logprobs = np.asarray(values, dtype="<f4").tobytes()
    topk = result.get("topk_prompt_logprobs")
    if topk is not None:
        _fill_topk(msg.topk_prompt_logprobs, topk)
    for seq, s in zip(msg.sequences, result["sequences"]):
        if s.get("topk_logprobs") is not None:
            _fill_topk(seq.topk_sampled_logprobs, s["topk_logprobs"])
    target = result.get("target_prompt_logprobs")
    if target is not None:
        _fill_tensor(msg.target_prompt_logprobs, np.asarray(target["data"], dtype="<f4"), target["shape"], target)
    alt = result.get("prompt_alt_tokens")
    if alt is not None:
        shape = _alt_shape(alt)
        _fill_tensor(msg.prompt_alt_tokens.tokens, np.asarray(alt["tokens"], dtype="<i8").reshape(-1), shape)
        _fill_tensor(msg.prompt_alt_tokens.logprobs, np.asarray(alt["logprobs"], dtype="<f4").reshape(-1), shape)
    return msg.SerializeToString()


def _fill_topk(msg, rows: list) -> None:
    """Dense length × k matrices; a row with nothing is (0, -99999.0) cells."""
    k = max((len(row) for row in rows if row), default=0)
    n = len(rows)
    ids = np.full((n, k), TOPK_EMPTY_TOKEN, dtype="<i4")
    lps = np.full((n, k), TOPK_EMPTY_LOGPROB, dtype="<f4")
    for i, row in enumerate(rows):
        for j, (tok, lp) in enumerate(row or []):
            ids[i, j] = tok
            lps[i, j] = lp
    msg.token_ids = ids.tobytes()
    msg.logprobs = lps.tobytes()
    msg.k = k
    msg.prompt_length = n


def _fill_tensor(msg, values: np.ndarray, shape: list, layout: dict | None = None) -> None:
    msg.dtype = pb.DTYPE_INT64 if np.issubdtype(values.dtype, np.integer) else pb.DTYPE_FLOAT32
    msg.shape.extend(shape)
    if layout is not None and layout.get("crow") is not None:
        msg.sparse_csr.values = values.tobytes()
        msg.sparse_csr.crow_indices = np.asarray(layout["crow"], dtype="<i8").tobytes()
        msg.sparse_csr.col_indices = np.asarray(layout["col"], dtype="<i8").tobytes()
    else:
        msg.dense = values.tobytes()

