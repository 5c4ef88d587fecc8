"""Request spans for OpenTelemetry: the engine continues the caller's trace.

With OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set, a request that
carries a W3C `traceparent` header and creates a future (forward_backward, optim_step, asample,
save_weights, ...) gets a span from the moment it was accepted to the moment its future settled,
child of the caller's span, with two children: `queue` (waiting for its seq id, a clock cycle, the
compute thread) and `compute` (running). Without the variable nothing here runs: the header is not
even read.
"""

import os
import re
import secrets
from contextvars import ContextVar
from dataclasses import dataclass

from . import __version__
from .otlp import SPAN_KIND_INTERNAL, SPAN_KIND_SERVER, OtlpSpanExporter, SpanRecord, parse_headers, traces_url


@dataclass(frozen=True)
class TraceParent:
    trace_id: str
    span_id: str


# The trace of the HTTP request being handled (set by the server's middleware, read when the
# request creates a future: both run in the request's task).
REQUEST_TRACE: ContextVar = ContextVar("tinker_request_trace", default=None)

_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$")


def parse_traceparent(value: str | None) -> TraceParent | None:
    """A sampled W3C traceparent (`00-<trace id>-<parent id>-<flags>`), else None (absent,
    malformed, all-zero ids, or not sampled: the caller records nothing, so neither do we)."""
    if not value:
        return None
    m = _TRACEPARENT.match(value.strip().lower())
    if m is None:
        return None
    version, trace_id, span_id, flags, rest = m.groups()
    if version == "ff" or (version == "00" and rest):
        return None
    if trace_id == "0" * 32 or span_id == "0" * 16 or not int(flags, 16) & 1:
        return None
    return TraceParent(trace_id, span_id)


class RequestTracer:
    def __init__(self, exporter: OtlpSpanExporter):
        self.exporter = exporter

    @classmethod
    def from_env(cls, env=None) -> "RequestTracer | None":
        env = os.environ if env is None else env
        url = traces_url(env)
        if url is None:
            return None
        headers = {**parse_headers(env.get("OTEL_EXPORTER_OTLP_HEADERS")),
                   **parse_headers(env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS"))}
        service = env.get("OTEL_SERVICE_NAME", "").strip() or "tinker-engine"
        return cls(OtlpSpanExporter(url, service, __version__, headers))

    def enter_request(self, traceparent: str | None) -> None:
        """Called per HTTP request: makes its trace the one futures it creates belong to."""
        REQUEST_TRACE.set(parse_traceparent(traceparent))

    def future_settled(self, fut) -> None:
        """Exports the spans of a future created under a trace (on the loop thread)."""
        parent = fut.trace
        if parent is None:
            return
        end = fut.settled_ns
        started = fut.started_ns or end  # settled without running (a failed model, an unload)
        span_id = secrets.token_hex(8)
        attributes = {"tinker.request_id": fut.request_id, "tinker.request_type": fut.request_type,
                      "tinker.state": fut.state}
        error = fut.error if fut.state == "failed" else None
        export = self.exporter.export
        export(SpanRecord(parent.trace_id, span_id, parent.span_id, f"engine {fut.request_type}", fut.created_ns, end,
                          SPAN_KIND_SERVER, attributes, error))
        export(SpanRecord(parent.trace_id, secrets.token_hex(8), span_id, "queue", fut.created_ns, started,
                          SPAN_KIND_INTERNAL, {}))
        if fut.started_ns:
            export(SpanRecord(parent.trace_id, secrets.token_hex(8), span_id, "compute", started, end,
                              SPAN_KIND_INTERNAL, {}, error))

    def shutdown(self) -> None:
        self.exporter.shutdown()
