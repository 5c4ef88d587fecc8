// A real OTLP/HTTP trace receiver for tests: POST /v1/traces with an ExportTraceServiceRequest in
// the JSON encoding (what @opentelemetry/exporter-trace-otlp-http and the engine send) or the
// protobuf one (other SDKs and collectors), gzip or not. It records every span with its resource's
// service name, ids as lowercase hex.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import protobuf from 'protobufjs';

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** The base endpoint, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  endpoint: string;
  spans: ReceivedSpan[];
  /** Requests it could not decode (the test fails on any). */
  errors: string[];
  close(): Promise<void>;
}

// The subset of opentelemetry-proto's trace.proto (and common.proto) the receiver reads.
const root = protobuf.Root.fromJSON({
  nested: {
    otlp: {
      nested: {
        ExportTraceServiceRequest: { fields: { resourceSpans: { rule: 'repeated', type: 'ResourceSpans', id: 1 } } },
        ResourceSpans: { fields: { resource: { type: 'Resource', id: 1 }, scopeSpans: { rule: 'repeated', type: 'ScopeSpans', id: 2 } } },
        Resource: { fields: { attributes: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
        ScopeSpans: { fields: { spans: { rule: 'repeated', type: 'Span', id: 2 } } },
        Span: {
          fields: {
            traceId: { type: 'bytes', id: 1 },
            spanId: { type: 'bytes', id: 2 },
            parentSpanId: { type: 'bytes', id: 4 },
            name: { type: 'string', id: 5 },
            kind: { type: 'int32', id: 6 },
            startTimeUnixNano: { type: 'fixed64', id: 7 },
            endTimeUnixNano: { type: 'fixed64', id: 8 },
            attributes: { rule: 'repeated', type: 'KeyValue', id: 9 },
          },
        },
        KeyValue: { fields: { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } } },
        AnyValue: {
          oneofs: { value: { oneof: ['stringValue', 'boolValue', 'intValue', 'doubleValue'] } },
          fields: { stringValue: { type: 'string', id: 1 }, boolValue: { type: 'bool', id: 2 }, intValue: { type: 'int64', id: 3 }, doubleValue: { type: 'double', id: 4 } },
        },
      },
    },
  },
});
const ExportRequest = root.lookupType('otlp.ExportTraceServiceRequest');

type AnyValue = { stringValue?: string; boolValue?: boolean; intValue?: string | number; doubleValue?: number };
type KeyValue = { key: string; value?: AnyValue };
type WireSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: KeyValue[];
};
type WireRequest = { resourceSpans?: Array<{ resource?: { attributes?: KeyValue[] }; scopeSpans?: Array<{ spans?: WireSpan[] }> }> };

const value = (v: AnyValue | undefined): unknown => v?.stringValue ?? v?.boolValue ?? (v?.intValue !== undefined ? Number(v.intValue) : v?.doubleValue);
const attributes = (kvs: KeyValue[] | undefined) => Object.fromEntries((kvs ?? []).map((kv) => [kv.key, value(kv.value)]));

/** Ids arrive as hex in JSON, as base64 after protobuf's toObject({ bytes: String }): both become hex. */
function spansOf(request: WireRequest, idToHex: (id: string) => string): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((rs) => {
    const service = String(attributes(rs.resource?.attributes)['service.name'] ?? '');
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        service,
        traceId: idToHex(s.traceId),
        spanId: idToHex(s.spanId),
        parentSpanId: s.parentSpanId ? idToHex(s.parentSpanId) : '',
        name: s.name,
        kind: s.kind ?? 0,
        startNs: BigInt(s.startTimeUnixNano),
        endNs: BigInt(s.endTimeUnixNano),
        attributes: attributes(s.attributes),
      })),
    );
  });
}

function decode(body: Buffer, contentType: string): ReceivedSpan[] {
  if (contentType.startsWith('application/json')) return spansOf(JSON.parse(body.toString('utf8')) as WireRequest, (id) => id.toLowerCase());
  if (contentType.startsWith('application/x-protobuf')) {
    const object = ExportRequest.toObject(ExportRequest.decode(body), { bytes: String, longs: String, oneofs: false }) as WireRequest;
    return spansOf(object, (id) => Buffer.from(id, 'base64').toString('hex'));
  }
  throw new Error(`unsupported content type ${contentType || '(none)'}`);
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const errors: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const contentType = req.headers['content-type'] ?? '';
      try {
        if (req.method !== 'POST' || req.url !== '/v1/traces') throw new Error(`${req.method} ${req.url}: not an OTLP trace export`);
        const raw = Buffer.concat(chunks);
        spans.push(...decode(req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw, contentType));
        const protobufReply = contentType.startsWith('application/x-protobuf');
        res.writeHead(200, { 'content-type': protobufReply ? 'application/x-protobuf' : 'application/json' });
        res.end(protobufReply ? Buffer.alloc(0) : '{}');
      } catch (err) {
        errors.push((err as Error).message);
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: (err as Error).message }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    errors,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Encodes spans as an OTLP protobuf request (the receiver's own test of its protobuf path). */
export function encodeProtobuf(service: string, spans: Array<Omit<ReceivedSpan, 'service' | 'attributes'> & { attributes?: Record<string, string> }>): Uint8Array {
  const hex = (id: string) => Buffer.from(id, 'hex');
  const message = ExportRequest.fromObject({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
        scopeSpans: [
          {
            spans: spans.map((s) => ({
              traceId: hex(s.traceId),
              spanId: hex(s.spanId),
              parentSpanId: s.parentSpanId ? hex(s.parentSpanId) : undefined,
              name: s.name,
              kind: s.kind,
              startTimeUnixNano: s.startNs.toString(),
              endTimeUnixNano: s.endNs.toString(),
              attributes: Object.entries(s.attributes ?? {}).map(([key, v]) => ({ key, value: { stringValue: v } })),
            })),
          },
        ],
      },
    ],
  });
  return ExportRequest.encode(message).finish();
}
