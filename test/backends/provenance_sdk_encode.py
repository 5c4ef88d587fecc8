"""Encodes datums with provenance through SDK 0.38's own request_conv (run in its cached venv).

stdin: JSON list of {tokens, targets, weights, model_input_spans, loss_fn_input_spans} (spans as
[kind, sequence_id, offset, length] or null); stdout: JSON list of each Datum message's bytes, hex.
"""

import json
import sys

import tinker
from tinker.proto.request_conv import forward_backward_request_to_proto
from tinker.types import ForwardBackwardInput
from tinker.types.forward_backward_request import ForwardBackwardRequest
from tinker.types.provenance_spans import PromptProvenanceSpan, SampledProvenanceSpan


def span(kind, sequence_id, offset, length):
    cls = SampledProvenanceSpan if kind == "sampled" else PromptProvenanceSpan
    return cls(sequence_id=sequence_id, offset=offset, length=length)


data = []
for d in json.load(sys.stdin):
    datum = tinker.Datum(
        model_input=tinker.ModelInput.from_ints(d["tokens"]),
        loss_fn_inputs={
            "target_tokens": tinker.TensorData(data=d["targets"], dtype="int64", shape=[len(d["targets"])]),
            "weights": tinker.TensorData(data=d["weights"], dtype="float32", shape=[len(d["weights"])]),
        },
    )
    if d["model_input_spans"] is not None:
        datum = datum.with_provenance(
            model_input=[span(*s) for s in d["model_input_spans"]],
            loss_fn_inputs=[span(*s) for s in d["loss_fn_input_spans"]],
        )
    data.append(datum)
request = ForwardBackwardRequest(
    forward_backward_input=ForwardBackwardInput(data=data, loss_fn="importance_sampling"), model_id="m", seq_id=1
)
msg = forward_backward_request_to_proto(request)
print(json.dumps([d.SerializeToString(deterministic=True).hex() for d in msg.data]))
