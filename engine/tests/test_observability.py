"""Observability: request spans over OTLP/HTTP (tracing.py, otlp.py) and Prometheus /metrics
(metrics.py), against a real engine and a real HTTP receiver on loopback."""

import json
import socket
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from http_client import Client, corpus, datum
from tinker_engine.otlp import OtlpSpanExporter, SpanRecord, encode_spans, parse_headers, traces_url
from tinker_engine.tracing import TraceParent, parse_traceparent

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


class OtlpReceiver:
    """Records the spans of OTLP/HTTP JSON posts to /v1/traces (with their resource's service name)."""

    def __init__(self):
        self.spans = []
        self.posts = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 — http.server's naming
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                ok = self.path == "/v1/traces" and self.headers.get("content-type", "").startswith("application/json")
                if ok:
                    receiver.posts += 1
                    for rs in json.loads(body)["resourceSpans"]:
                        service = {a["key"]: a["value"] for a in rs["resource"]["attributes"]}["service.name"]
                        for ss in rs["scopeSpans"]:
                            for span in ss["spans"]:
                                receiver.spans.append({**span, "service": service["stringValue"]})
                self.send_response(200 if ok else 404)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, predicate, timeout=30.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            found = [s for s in list(self.spans) if predicate(s)]
            if found:
                return found
            time.sleep(0.1)
        raise TimeoutError(f"no such span among {len(self.spans)} received")

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_traceparent_parsing():
    assert parse_traceparent(f"00-{TRACE_ID}-{PARENT_ID}-01") == TraceParent(TRACE_ID, PARENT_ID)
    assert parse_traceparent(f"00-{TRACE_ID.upper()}-{PARENT_ID}-03") == TraceParent(TRACE_ID, PARENT_ID)
    # A later version may append fields; version 00 may not; ff is invalid.
    assert parse_traceparent(f"01-{TRACE_ID}-{PARENT_ID}-01-extra") == TraceParent(TRACE_ID, PARENT_ID)
    for bad in [None, "", "garbage", f"00-{TRACE_ID}-{PARENT_ID}-00", f"00-{'0' * 32}-{PARENT_ID}-01",
                f"00-{TRACE_ID}-{'0' * 16}-01", f"ff-{TRACE_ID}-{PARENT_ID}-01", f"00-{TRACE_ID}-{PARENT_ID}-01-x",
                f"00-{TRACE_ID[:-1]}-{PARENT_ID}-01"]:
        assert parse_traceparent(bad) is None, bad


def test_endpoint_and_headers_as_the_otel_sdks_read_them():
    assert traces_url({}) is None
    assert traces_url({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}) == "http://c:4318/v1/traces"
    assert traces_url({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                       "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/x"}) == "http://t:1/x"
    assert traces_url({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}) is None
    assert parse_headers("a=1, b = x%20y,bad") == {"a": "1", "b": "x y"}


def test_otlp_json_encoding():
    span = SpanRecord(TRACE_ID, PARENT_ID, "", "engine Sample", 1_000, 2_000, 2, {"n": 3, "x": 0.5, "s": "v", "b": True},
                      error="boom")
    request = json.loads(encode_spans([span], "svc", "1.0"))
    (rs,) = request["resourceSpans"]
    assert rs["resource"]["attributes"] == [{"key": "service.name", "value": {"stringValue": "svc"}}]
    (encoded,) = rs["scopeSpans"][0]["spans"]
    assert encoded["traceId"] == TRACE_ID and encoded["spanId"] == PARENT_ID and "parentSpanId" not in encoded
    assert encoded["startTimeUnixNano"] == "1000" and encoded["endTimeUnixNano"] == "2000" and encoded["kind"] == 2
    assert encoded["attributes"] == [
        {"key": "n", "value": {"intValue": "3"}}, {"key": "x", "value": {"doubleValue": 0.5}},
        {"key": "s", "value": {"stringValue": "v"}}, {"key": "b", "value": {"boolValue": True}}]
    assert encoded["status"] == {"code": 2, "message": "boom"}


def test_exporter_batches_and_survives_a_collector_that_is_down():
    receiver = OtlpReceiver()
    try:
        exporter = OtlpSpanExporter(f"{receiver.url}/v1/traces", "svc", interval_s=1.0)
        for i in range(5):
            exporter.export(SpanRecord(TRACE_ID, f"{i:016x}", "", f"s{i}", 1, 2))
        receiver.wait_for(lambda s: s["name"] == "s4")
        assert len(receiver.spans) == 5 and receiver.posts == 1  # one batch
        exporter.shutdown()
    finally:
        receiver.close()

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    down = OtlpSpanExporter(f"http://127.0.0.1:{dead}/v1/traces", "svc", max_queue=3, interval_s=0.1)
    started = time.monotonic()
    for i in range(10):  # never blocks, never raises: the queue's overflow is dropped
        down.export(SpanRecord(TRACE_ID, f"{i:016x}", "", "s", 1, 2))
    assert time.monotonic() - started < 0.1
    deadline = time.time() + 10
    while down.dropped < 10 and time.time() < deadline:
        time.sleep(0.05)
    assert down.dropped == 10 and down.exported == 0
    down.shutdown()


def scrape(url: str) -> dict:
    """`/metrics` without an API key, as {sample line name with labels: value}."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as r:
        assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
        text = r.read().decode()
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def test_request_spans_continue_the_callers_trace_and_metrics_count_the_work(fresh_engine, tmp_path, monkeypatch):
    receiver = OtlpReceiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "engine-under-test")
    try:
        engine = fresh_engine(tmp_path / "data")
        c = Client(engine.url)
        model = c.create_model(c.session(), 0)  # no traceparent: no span
        traced = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
        data = [datum(s) for s in corpus(3, length=20)]
        fb = c.submit_fb(model, 1, data).json()
        r = c.post("forward_backward", {"model_id": model, "seq_id": 2, "forward_backward_input": {
            "data": data, "loss_fn": "cross_entropy"}}, headers=traced)
        assert r.status == 200
        c.done(fb["request_id"])
        c.done(r.json()["request_id"])
        sampler = c.done(c.ok("save_weights_for_sampler", {"model_id": model, "seq_id": 3, "sampling_session_seq_id": 0},
                              headers=traced)["request_id"])["sampling_session_id"]
        sample = c.ok("asample", {"sampling_session_id": sampler, "seq_id": 0, "num_samples": 2,
                                  "prompt": {"chunks": [{"tokens": corpus(1)[0][:6]}]},
                                  "sampling_params": {"max_tokens": 5, "temperature": 0.0}}, headers=traced)
        sequences = c.done(sample["request_id"])["sequences"]

        (fb_span,) = receiver.wait_for(lambda s: s["name"] == "engine ForwardBackward")
        assert fb_span["traceId"] == TRACE_ID and fb_span["parentSpanId"] == PARENT_ID
        assert fb_span["service"] == "engine-under-test" and fb_span["kind"] == 2
        attrs = {a["key"]: a["value"]["stringValue"] for a in fb_span["attributes"]}
        assert attrs["tinker.request_id"] == r.json()["request_id"] and attrs["tinker.state"] == "done"
        receiver.wait_for(lambda s: s.get("parentSpanId") == fb_span["spanId"] and s["name"] == "compute")
        children = {s["name"]: s for s in receiver.spans if s.get("parentSpanId") == fb_span["spanId"]}
        assert set(children) == {"queue", "compute"}
        assert all(s["traceId"] == TRACE_ID for s in children.values())
        # queue then compute, both inside the request's span
        start, end = int(fb_span["startTimeUnixNano"]), int(fb_span["endTimeUnixNano"])
        assert start == int(children["queue"]["startTimeUnixNano"])
        assert int(children["queue"]["endTimeUnixNano"]) == int(children["compute"]["startTimeUnixNano"])
        assert int(children["compute"]["endTimeUnixNano"]) == end and start <= end
        receiver.wait_for(lambda s: s["name"] == "engine Sample" and s["parentSpanId"] == PARENT_ID)
        receiver.wait_for(lambda s: s["name"] == "engine SaveWeightsForSampler")
        # Requests without a traceparent made none: one ForwardBackward span, no CreateModel span.
        assert [s["name"] for s in receiver.spans].count("engine ForwardBackward") == 1
        assert "engine CreateModel" not in [s["name"] for s in receiver.spans]

        m = scrape(engine.url)
        assert m["tinker_engine_trained_tokens_total"] == 2 * 3 * 19
        assert m["tinker_engine_sampled_tokens_total"] == sum(len(s["tokens"]) for s in sequences) > 0
        assert m['tinker_engine_requests_total{type="ForwardBackward",outcome="done"}'] == 2
        assert m['tinker_engine_batch_size_bucket{type="ForwardBackward",le="2"}'] == 0
        assert m['tinker_engine_batch_size_bucket{type="ForwardBackward",le="4"}'] == 2
        assert m['tinker_engine_batch_size_count{type="Sample"}'] == 1
        assert m['tinker_engine_request_compute_seconds_count{type="ForwardBackward"}'] == 2
        assert m["tinker_engine_models"] == 1 and m["process_resident_memory_bytes"] > 0
    finally:
        receiver.close()


def test_metrics_show_a_request_queued_behind_a_seq_gap(engine):
    c = Client(engine.url)
    model = c.create_model(c.session(), 0)
    before = scrape(engine.url).get('tinker_engine_queue_depth{type="OptimStep"}', 0)
    waiting = c.ok("optim_step", {"model_id": model, "seq_id": 2, "adam_params": {"learning_rate": 1e-2}})
    assert scrape(engine.url)['tinker_engine_queue_depth{type="OptimStep"}'] == before + 1
    c.forward_backward(model, 1, [datum(corpus(1)[0])])
    c.done(waiting["request_id"])
    assert scrape(engine.url).get('tinker_engine_queue_depth{type="OptimStep"}', 0) == before
