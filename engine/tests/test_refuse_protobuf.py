"""--refuse-protobuf: the engine as a server that reads JSON only (hatchery-core 0.3) looks to a client
that still finds protobuf offered in client/config: every protobuf forward_backward body gets a plain
500 before it is read, nothing is queued, and the same request as JSON trains. Fuller tier: the gate
drives the switch through the TypeScript client (test/backends/wire.integration.test.ts)."""
import pytest

from http_client import Client, corpus, datum


@pytest.mark.full
def test_protobuf_bodies_get_a_plain_500_and_json_still_trains(fresh_engine):
    c = Client(fresh_engine(None, "--refuse-protobuf").url)
    assert c.post("client/config", {"sdk_version": "0.38.0"}).json()["proto_write_fwdbwd"] is True
    model = c.create_model(c.session(), 0, seed=3)
    refused = c.post("forward_backward", raw=b"\x0a\x03any protobuf", content_type="application/x-protobuf")
    assert refused.status == 500
    assert refused.headers["content-type"].startswith("text/plain")
    assert refused.raw == b"Internal Server Error"
    # Nothing was queued under seq 1: the JSON request with that seq id is the first, and it trains.
    out = c.forward_backward(model, 1, [datum(t) for t in corpus(2)])
    assert len(out["loss_fn_outputs"]) == 2
    c.optim_step(model, 2)
