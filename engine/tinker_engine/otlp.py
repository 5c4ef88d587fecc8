"""A minimal OTLP/HTTP span exporter on the standard library.

The engine's environment is cached by the hash of requirements.txt (a new pip dependency makes
every machine download PyTorch again), so instead of opentelemetry-sdk this sends the OTLP JSON
encoding of an ExportTraceServiceRequest to `<endpoint>/v1/traces` itself. Spans wait in a bounded
queue and a daemon thread posts them in batches: exporting never blocks request handling, and a
collector that is down or slow loses spans (counted and logged), never a request.
"""

import json
import logging
import queue
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

log = logging.getLogger("tinker_engine")

SPAN_KIND_INTERNAL, SPAN_KIND_SERVER = 1, 2
STATUS_ERROR = 2


@dataclass
class SpanRecord:
    trace_id: str  # 32 lowercase hex digits
    span_id: str  # 16 lowercase hex digits
    parent_span_id: str  # "" for a root span
    name: str
    start_ns: int  # Unix epoch nanoseconds
    end_ns: int
    kind: int = SPAN_KIND_INTERNAL
    attributes: dict = field(default_factory=dict)
    error: str | None = None


def traces_url(env) -> str | None:
    """Where spans go, as the OpenTelemetry SDKs read it: the traces endpoint as given, else the
    base endpoint + /v1/traces; None (tracing off) when neither is set or the SDK is disabled."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    explicit = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if explicit:
        return explicit
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    return base.rstrip("/") + "/v1/traces" if base else None


def parse_headers(text: str | None) -> dict:
    """OTEL_EXPORTER_OTLP_HEADERS: `key=value,key2=value2`, values percent-encoded."""
    headers = {}
    for part in (text or "").split(","):
        key, sep, value = part.partition("=")
        if sep and key.strip():
            headers[key.strip()] = urllib.parse.unquote(value.strip())
    return headers


def _attribute(key: str, value) -> dict:
    if isinstance(value, bool):
        wrapped = {"boolValue": value}
    elif isinstance(value, int):
        wrapped = {"intValue": str(value)}  # int64 is a string in OTLP JSON
    elif isinstance(value, float):
        wrapped = {"doubleValue": value}
    else:
        wrapped = {"stringValue": str(value)}
    return {"key": key, "value": wrapped}


def encode_spans(spans: list, service_name: str, scope_version: str) -> bytes:
    """The OTLP JSON ExportTraceServiceRequest of `spans` (ids as hex, as OTLP JSON wants them)."""
    encoded = []
    for s in spans:
        span = {
            "traceId": s.trace_id,
            "spanId": s.span_id,
            "name": s.name,
            "kind": s.kind,
            "startTimeUnixNano": str(s.start_ns),
            "endTimeUnixNano": str(s.end_ns),
            "attributes": [_attribute(k, v) for k, v in s.attributes.items()],
        }
        if s.parent_span_id:
            span["parentSpanId"] = s.parent_span_id
        if s.error is not None:
            span["status"] = {"code": STATUS_ERROR, "message": s.error}
        encoded.append(span)
    request = {
        "resourceSpans": [{
            "resource": {"attributes": [_attribute("service.name", service_name)]},
            "scopeSpans": [{"scope": {"name": "tinker_engine", "version": scope_version}, "spans": encoded}],
        }]
    }
    return json.dumps(request).encode()


class OtlpSpanExporter:
    """Batches spans on a daemon thread and posts them; `export` only enqueues."""

    def __init__(self, url: str, service_name: str, scope_version: str = "", headers: dict | None = None,
                 max_queue: int = 4096, batch_size: int = 512, interval_s: float = 1.0, timeout_s: float = 5.0):
        self.url = url
        self.service_name = service_name
        self.scope_version = scope_version
        self.headers = {**(headers or {}), "Content-Type": "application/json"}
        self.batch_size = batch_size
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.dropped = 0  # spans lost to a full queue or a failed post
        self.exported = 0
        self._queue: queue.Queue = queue.Queue(maxsize=max_queue)
        self._stop = threading.Event()
        self._last_warning = 0.0
        self._thread = threading.Thread(target=self._run, name="otlp-exporter", daemon=True)
        self._thread.start()

    def export(self, span: SpanRecord) -> None:
        try:
            self._queue.put_nowait(span)
        except queue.Full:
            self.dropped += 1

    def shutdown(self, timeout_s: float = 2.0) -> None:
        """Posts what is queued (for at most `timeout_s`) and stops the thread."""
        self._stop.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            batch = self._next_batch()
            if batch:
                self._post(batch)
            elif self._stop.is_set():
                return

    def _next_batch(self) -> list:
        """Up to `batch_size` spans: what arrives within `interval_s`, or what is left once stopping."""
        batch = []
        deadline = time.monotonic() + self.interval_s
        while len(batch) < self.batch_size:
            try:
                if self._stop.is_set():
                    batch.append(self._queue.get_nowait())
                else:
                    wait = deadline - time.monotonic()
                    if wait <= 0:
                        break
                    batch.append(self._queue.get(timeout=wait))
            except queue.Empty:
                break
        return batch

    def _post(self, batch: list) -> None:
        body = encode_spans(batch, self.service_name, self.scope_version)
        request = urllib.request.Request(self.url, data=body, headers=self.headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                response.read()
            self.exported += len(batch)
        except Exception as e:  # noqa: BLE001 — a collector that is down costs spans, nothing else
            self.dropped += len(batch)
            now = time.monotonic()
            if now - self._last_warning > 60:
                self._last_warning = now
                log.warning("OTLP export to %s failed (%s: %s); %d spans dropped so far",
                            self.url, type(e).__name__, e, self.dropped)
