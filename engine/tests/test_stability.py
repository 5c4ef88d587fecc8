"""Stability records and provenance checks (stability.py): what is recorded, for how long (one day,
restarted by each training request that uses a sequence), and every way a span can be wrong.
The HTTP path with the real SDK 0.38 is in test_conformance_sdk.py (provenance_flow)."""

import numpy as np
import pytest

from tinker_engine import proto_schema as pb
from tinker_engine.errors import EngineError
from tinker_engine.stability import RETENTION_SECONDS, StabilityStore, check_provenance
from tinker_engine.wire import Datum, ForwardRequest, parse_forward_backward_proto

PROMPT = [5, 6, 7, 8]
SAMPLED = [11, 12, 13]


class Clock:
    def __init__(self):
        self.t = 1_000.0

    def __call__(self):
        return self.t


def store_with(request_id="s:1", session="sess", clock=None, n=2):
    store = StabilityStore(now=clock or Clock())
    store.expect(request_id, session, PROMPT)
    store.settle(request_id, {"sequences": [{"tokens": SAMPLED, "logprobs": [-1.0, -2.0, -3.0]}] * n})
    return store


def rl_request(sid="s:1:0", loss="importance_sampling", sampled_offset=0, prompt_offset=1):
    full = PROMPT + SAMPLED
    n_p, n_s = len(PROMPT), len(SAMPLED)
    datum = Datum(
        tokens=np.asarray(full[:-1], dtype=np.int64),
        inputs={"target_tokens": np.asarray(full[1:], dtype=np.int64)},
        input_spans=[("prompt", sid, 0, n_p), ("sampled", sid, sampled_offset, n_s - 1)],
        target_spans=[("prompt", sid, prompt_offset, n_p - 1), ("sampled", sid, sampled_offset, n_s)],
    )
    return ForwardRequest(data=[datum], loss_fn=loss, loss_fn_config={}, forward_only=False)


def refused(req, store, match, session="sess", require=False):
    with pytest.raises(EngineError, match=match) as e:
        check_provenance(req, store, session, require)
    assert e.value.status == 400


def test_records_each_sequence_of_a_request_that_asked_and_nothing_else():
    store = store_with(n=2)
    rec = store.get("s:1:1")
    assert rec.session_id == "sess" and rec.prompt.tolist() == PROMPT and rec.sampled.tolist() == SAMPLED
    assert rec.logprobs.dtype == np.float32 and store.get("s:1:2") is None
    store.settle("s:2", {"sequences": [{"tokens": [1]}]})  # never expected: not recorded
    assert store.get("s:2:0") is None and len(store) == 2
    store.expect("s:3", "sess", PROMPT)
    store.forget("s:3")  # the request failed
    store.settle("s:3", {"sequences": [{"tokens": [1]}]})
    assert store.get("s:3:0") is None


def test_a_day_after_sampling_unless_a_training_request_used_it():
    clock = Clock()
    store = store_with(clock=clock)
    clock.t += RETENTION_SECONDS - 1
    assert check_provenance(rl_request(), store, "sess", require=True) == ["s:1:0"] * 4
    store.touch(["s:1:0"])  # the training request restarts its day…
    clock.t += RETENTION_SECONDS - 1
    assert store.get("s:1:0") is not None
    assert store.get("s:1:1") is None  # …not its sibling's, which was never used
    clock.t += 1
    assert store.get("s:1:0") is None
    refused(rl_request(loss="stable_reinforce"), store, "not recorded", require=True)


def test_correct_spans_pass_and_unrecorded_ids_pass_for_served_losses():
    store = store_with()
    assert check_provenance(rl_request(), store, "sess", require=False)
    assert check_provenance(rl_request(sid="never:recorded:0"), store, "sess", require=False) == []
    plain = rl_request()
    plain.data[0].input_spans = plain.data[0].target_spans = None
    assert check_provenance(plain, store, "sess", require=False) == []


@pytest.mark.parametrize("mutate,match", [
    (lambda d: setattr(d, "target_spans", None), "provenance comes as a pair"),
    (lambda d: d.input_spans.append(("sampled", "s:1:0", 0, 1)), r"model_input_spans cover 7 positions but the field has 6"),
    (lambda d: d.target_spans.__setitem__(0, ("prompt", "s:1:0", 0, 3)), r"loss_fn_input_spans\[0\]: position 0 holds token 6 but prompt position 0"),
    (lambda d: d.input_spans.__setitem__(1, ("sampled", "s:1:0", 1, 2)), r"model_input_spans\[1\]: position 4 holds token 11 but sampled tokens position 1"),
    (lambda d: d.target_spans.__setitem__(1, ("sampled", "s:1:0", 1, 3)), r"covers sampled tokens positions \[1, 4\) of sequence 's:1:0', which has 3"),
    (lambda d: d.input_spans.__setitem__(0, ("prompt", "", 0, 4)), "sequence_id must be non-empty"),
    (lambda d: d.input_spans.__setitem__(0, ("prompt", "s:1:0", -1, 4)), "offset and length >= 0"),
])
def test_wrong_spans_are_refused_naming_datum_field_span_and_position(mutate, match):
    req = rl_request()
    mutate(req.data[0])
    refused(req, store_with(), match)


def test_sequences_belong_to_the_session_that_sampled_them():
    refused(rl_request(), store_with(session="other"), "of another session")


def test_stable_reinforce_needs_provenance_naming_records_with_a_sampled_target():
    store = store_with()
    plain = rl_request(loss="stable_reinforce")
    plain.data[0].input_spans = plain.data[0].target_spans = None
    refused(plain, store, r"data\[0\] has no provenance spans; loss_fn 'stable_reinforce' needs them", require=True)
    refused(rl_request(sid="nope:0", loss="stable_reinforce"), store, "which is not recorded", require=True)
    prompt_only = rl_request(loss="stable_reinforce")
    d = prompt_only.data[0]
    d.tokens, d.inputs["target_tokens"] = d.tokens[:3], d.inputs["target_tokens"][:3]
    d.input_spans, d.target_spans = [("prompt", "s:1:0", 0, 3)], [("prompt", "s:1:0", 1, 3)]
    refused(prompt_only, store, "no target is a sampled token", require=True)
    assert check_provenance(rl_request(loss="stable_reinforce"), store, "sess", require=True)


def test_memory_is_bounded_oldest_records_first():
    clock = Clock()
    store = StabilityStore(now=clock, max_sequences=3)
    for i in range(3):
        store.expect(f"r:{i}", "sess", PROMPT)
        store.settle(f"r:{i}", {"sequences": [{"tokens": [i]}, {"tokens": [i]}]})
    assert len(store) == 3 and store.get("r:0:0") is None and store.get("r:2:1") is not None


def test_protobuf_spans_decode_in_order_with_their_kinds():
    msg = pb.ForwardBackwardRequest(model_id="m", seq_id=1, loss_fn="importance_sampling")
    d = msg.data.add()
    d.model_input.add().encoded_text.tokens = np.asarray([5, 6, 7], dtype="<i4").tobytes()
    t = d.loss_fn_inputs["target_tokens"]
    t.dense, t.dtype, t.shape[:] = np.asarray([6, 7, 8], dtype="<i8").tobytes(), 2, [3]
    a = d.model_input_spans.add().prompt_tokens
    a.sequence_id, a.offset, a.length = "x:0", 0, 2
    b = d.model_input_spans.add().sampled_tokens
    b.sequence_id, b.length = "x:0", 1
    c = d.loss_fn_input_spans.add().sampled_tokens
    c.sequence_id, c.offset, c.length = "x:0", 0, 3
    _, _, req = parse_forward_backward_proto(msg.SerializeToString())
    assert req.data[0].input_spans == [("prompt", "x:0", 0, 2), ("sampled", "x:0", 0, 1)]
    assert req.data[0].target_spans == [("sampled", "x:0", 0, 3)]
    plain = pb.ForwardBackwardRequest(model_id="m", seq_id=1, loss_fn="cross_entropy")
    plain.data.add().CopyFrom(d)
    del plain.data[0].model_input_spans[:]
    del plain.data[0].loss_fn_input_spans[:]
    _, _, req2 = parse_forward_backward_proto(plain.SerializeToString())
    assert req2.data[0].input_spans is None and req2.data[0].target_spans is None
    assert req.fingerprint() != req2.fingerprint()
