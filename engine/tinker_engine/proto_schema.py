"""The public Tinker protobuf messages (package tinker_public), declared in code.

Only field numbers and wire types matter for compatibility with the SDK, so the schema is built
programmatically instead of shipping protoc output. Field numbers follow the protocol reference §8.
"""

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_OPTIONAL, _REPEATED = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED

DTYPE_FLOAT32 = 1
DTYPE_INT64 = 2
DTYPE_INT32 = 3
DTYPE_BFLOAT16 = 4
STOP_REASON_STOP = 0
STOP_REASON_LENGTH = 1


def _field(msg, name, number, ftype, label=_OPTIONAL, type_name=None, oneof=None):
    f = msg.field.add(name=name, number=number, type=ftype, label=label)
    if type_name:
        f.type_name = type_name
    if oneof is not None:
        f.oneof_index = oneof
    return f


def _map_entry(msg, entry_name, value_type, value_type_name=None):
    entry = msg.nested_type.add(name=entry_name)
    entry.options.map_entry = True
    _field(entry, "key", 1, _F.TYPE_STRING)
    _field(entry, "value", 2, value_type, type_name=value_type_name)
    return entry


def _build_file():
    fd = descriptor_pb2.FileDescriptorProto(
        name="tinker_engine_public.proto", package="tinker_public", syntax="proto3"
    )
    fd.enum_type.add(name="DType").value.extend(
        [
            descriptor_pb2.EnumValueDescriptorProto(name=n, number=v)
            for n, v in [
                ("DTYPE_UNSPECIFIED", 0),
                ("DTYPE_FLOAT32", 1),
                ("DTYPE_INT64", 2),
                ("DTYPE_INT32", 3),
                ("DTYPE_BFLOAT16", 4),
            ]
        ]
    )
    fd.enum_type.add(name="StopReason").value.extend(
        [
            descriptor_pb2.EnumValueDescriptorProto(name="STOP_REASON_STOP", number=0),
            descriptor_pb2.EnumValueDescriptorProto(name="STOP_REASON_LENGTH", number=1),
        ]
    )

    m = fd.message_type.add(name="SparseCsr")
    _field(m, "values", 1, _F.TYPE_BYTES)
    _field(m, "crow_indices", 2, _F.TYPE_BYTES)
    _field(m, "col_indices", 3, _F.TYPE_BYTES)

    m = fd.message_type.add(name="Tensor")
    m.oneof_decl.add(name="encoding")
    _field(m, "dense", 1, _F.TYPE_BYTES, oneof=0)
    _field(m, "sparse_csr", 2, _F.TYPE_MESSAGE, type_name=".tinker_public.SparseCsr", oneof=0)
    _field(m, "dtype", 3, _F.TYPE_ENUM, type_name=".tinker_public.DType")
    _field(m, "shape", 4, _F.TYPE_INT64, label=_REPEATED)

    m = fd.message_type.add(name="EncodedTextChunk")
    _field(m, "tokens", 1, _F.TYPE_BYTES)
    m = fd.message_type.add(name="ImageDimensions")
    _field(m, "width", 1, _F.TYPE_UINT32)
    _field(m, "height", 2, _F.TYPE_UINT32)
    m = fd.message_type.add(name="ImageChunk")
    _field(m, "data", 1, _F.TYPE_BYTES)
    _field(m, "format", 2, _F.TYPE_STRING)
    # proto3 `optional` (presence tracked: an absent count is not a count of 0): a synthetic oneof each.
    m.oneof_decl.add(name="_expected_tokens")
    _field(m, "expected_tokens", 3, _F.TYPE_INT32, oneof=0).proto3_optional = True
    m.oneof_decl.add(name="_override_dimensions")
    _field(m, "override_dimensions", 4, _F.TYPE_MESSAGE, type_name=".tinker_public.ImageDimensions",
           oneof=1).proto3_optional = True
    m = fd.message_type.add(name="DmelChunk")
    _field(m, "dmel", 1, _F.TYPE_BYTES)

    m = fd.message_type.add(name="Chunk")
    m.oneof_decl.add(name="chunk")
    _field(m, "encoded_text", 1, _F.TYPE_MESSAGE, type_name=".tinker_public.EncodedTextChunk", oneof=0)
    _field(m, "image", 2, _F.TYPE_MESSAGE, type_name=".tinker_public.ImageChunk", oneof=0)
    _field(m, "dmel", 3, _F.TYPE_MESSAGE, type_name=".tinker_public.DmelChunk", oneof=0)

    # SDK 0.38 provenance: which recorded prompt or sampled positions a datum's tokens are.
    for name in ("PromptProvenanceSpan", "SampledProvenanceSpan"):
        m = fd.message_type.add(name=name)
        _field(m, "sequence_id", 1, _F.TYPE_STRING)
        _field(m, "offset", 2, _F.TYPE_INT64)
        _field(m, "length", 3, _F.TYPE_INT64)
    m = fd.message_type.add(name="ProvenanceSpan")
    m.oneof_decl.add(name="span")
    _field(m, "prompt_tokens", 1, _F.TYPE_MESSAGE, type_name=".tinker_public.PromptProvenanceSpan", oneof=0)
    _field(m, "sampled_tokens", 2, _F.TYPE_MESSAGE, type_name=".tinker_public.SampledProvenanceSpan", oneof=0)

    m = fd.message_type.add(name="Datum")
    _map_entry(m, "LossFnInputsEntry", _F.TYPE_MESSAGE, ".tinker_public.Tensor")
    _field(m, "model_input", 1, _F.TYPE_MESSAGE, label=_REPEATED, type_name=".tinker_public.Chunk")
    _field(
        m,
        "loss_fn_inputs",
        2,
        _F.TYPE_MESSAGE,
        label=_REPEATED,
        type_name=".tinker_public.Datum.LossFnInputsEntry",
    )
    _field(m, "model_input_spans", 3, _F.TYPE_MESSAGE, label=_REPEATED, type_name=".tinker_public.ProvenanceSpan")
    _field(m, "loss_fn_input_spans", 4, _F.TYPE_MESSAGE, label=_REPEATED, type_name=".tinker_public.ProvenanceSpan")

    m = fd.message_type.add(name="ForwardBackwardRequest")
    _map_entry(m, "LossFnConfigEntry", _F.TYPE_DOUBLE)
    _field(m, "model_id", 1, _F.TYPE_STRING)
    _field(m, "seq_id", 2, _F.TYPE_INT32)
    _field(m, "data", 3, _F.TYPE_MESSAGE, label=_REPEATED, type_name=".tinker_public.Datum")
    _field(m, "loss_fn", 4, _F.TYPE_STRING)
    _field(
        m,
        "loss_fn_config",
        5,
        _F.TYPE_MESSAGE,
        label=_REPEATED,
        type_name=".tinker_public.ForwardBackwardRequest.LossFnConfigEntry",
    )
    _field(m, "forward_only", 6, _F.TYPE_BOOL)
    _map_entry(m, "LossFnConfigV2Entry", _F.TYPE_MESSAGE, ".tinker_public.LossConfigValue")
    _field(
        m,
        "loss_fn_config_v2",
        7,
        _F.TYPE_MESSAGE,
        label=_REPEATED,
        type_name=".tinker_public.ForwardBackwardRequest.LossFnConfigV2Entry",
    )

    m = fd.message_type.add(name="LossConfigValue")  # SDK 0.38
    m.oneof_decl.add(name="value")
    _field(m, "number", 1, _F.TYPE_DOUBLE, oneof=0)
    _field(m, "text", 2, _F.TYPE_STRING, oneof=0)

    m = fd.message_type.add(name="BatchedTensor")
    _field(m, "data", 1, _F.TYPE_BYTES)
    _field(m, "offsets", 2, _F.TYPE_BYTES)
    _field(m, "dtype", 3, _F.TYPE_ENUM, type_name=".tinker_public.DType")
    _field(m, "trailing_shape", 4, _F.TYPE_INT64, label=_REPEATED)

    m = fd.message_type.add(name="ArrayRecord")
    _map_entry(m, "FieldsEntry", _F.TYPE_MESSAGE, ".tinker_public.BatchedTensor")
    _field(m, "type_tag", 1, _F.TYPE_STRING)
    _field(
        m, "fields", 2, _F.TYPE_MESSAGE, label=_REPEATED, type_name=".tinker_public.ArrayRecord.FieldsEntry"
    )
    _field(m, "num_datums", 3, _F.TYPE_INT64)

    m = fd.message_type.add(name="ForwardBackwardOutput")
    _map_entry(m, "MetricsEntry", _F.TYPE_DOUBLE)
    _field(m, "loss_fn_output_type", 1, _F.TYPE_STRING)
    _field(m, "loss_fn_outputs", 2, _F.TYPE_MESSAGE, label=_REPEATED, type_name=".tinker_public.ArrayRecord")
    _field(
        m,
        "metrics",
        3,
        _F.TYPE_MESSAGE,
        label=_REPEATED,
        type_name=".tinker_public.ForwardBackwardOutput.MetricsEntry",
    )

    # 0.38 renamed it TopkLogprobs (field 4 `length`); the wire is the same.
    m = fd.message_type.add(name="TopkPromptLogprobs")
    _field(m, "token_ids", 1, _F.TYPE_BYTES)
    _field(m, "logprobs", 2, _F.TYPE_BYTES)
    _field(m, "k", 3, _F.TYPE_UINT32)
    _field(m, "prompt_length", 4, _F.TYPE_UINT32)

    m = fd.message_type.add(name="SampledSequence")
    _field(m, "stop_reason", 1, _F.TYPE_ENUM, type_name=".tinker_public.StopReason")
    _field(m, "tokens", 2, _F.TYPE_BYTES)
    _field(m, "logprobs", 3, _F.TYPE_BYTES)
    _field(m, "topk_sampled_logprobs", 4, _F.TYPE_MESSAGE, type_name=".tinker_public.TopkPromptLogprobs")

    m = fd.message_type.add(name="PromptAltTokens")
    _field(m, "tokens", 1, _F.TYPE_MESSAGE, type_name=".tinker_public.Tensor")
    _field(m, "logprobs", 2, _F.TYPE_MESSAGE, type_name=".tinker_public.Tensor")

    m = fd.message_type.add(name="SampleResponse")
    _field(m, "sequences", 1, _F.TYPE_MESSAGE, label=_REPEATED, type_name=".tinker_public.SampledSequence")
    _field(m, "prompt_logprobs", 2, _F.TYPE_BYTES)
    _field(m, "topk_prompt_logprobs", 3, _F.TYPE_MESSAGE, type_name=".tinker_public.TopkPromptLogprobs")
    _field(m, "prompt_cache_hit_tokens", 4, _F.TYPE_INT32)
    _field(m, "target_prompt_logprobs", 5, _F.TYPE_MESSAGE, type_name=".tinker_public.Tensor")
    _field(m, "prompt_alt_tokens", 6, _F.TYPE_MESSAGE, type_name=".tinker_public.PromptAltTokens")
    return fd


# A private pool keeps these names from clashing with an SDK's own tinker_public module when both
# are imported into one process (e.g. in tests).
_pool = descriptor_pool.DescriptorPool()
_pool.Add(_build_file())


def _message(name):
    return message_factory.GetMessageClass(_pool.FindMessageTypeByName(f"tinker_public.{name}"))


ForwardBackwardRequest = _message("ForwardBackwardRequest")
ForwardBackwardOutput = _message("ForwardBackwardOutput")
SampleResponse = _message("SampleResponse")
Tensor = _message("Tensor")
