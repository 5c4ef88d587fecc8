// The protobuf dialect of SDK 0.25 (§8): forward_backward request bodies and ForwardBackward /
// Sample results. The schema lives in tinker_public.proto next to this file and is parsed at
// runtime by protobufjs, so the same code runs from the source tree (tsx, vitest) and from dist.
// Both directions are implemented: the client needs encode-request / decode-result, the test
// fake server needs the opposite, and round-trip tests pin the two together.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import {
  packFloat32,
  packInt32,
  packInt64,
  unpackBfloat16,
  unpackFloat32,
  unpackInt32,
  unpackInt64,
} from './bytes.js';
import type {
  Datum,
  ProvenanceSpan,
  ForwardBackwardOutput,
  ModelInputChunk,
  SampleResponse,
  SampledSequence,
  TensorData,
} from './types.js';

const PROTO_FILE = 'tinker_public.proto';

/** Found next to this module, or (for a tsc build under dist/) back in the source tree. */
function locateProto(): string {
  const candidates = [
    new URL(`./${PROTO_FILE}`, import.meta.url),
    new URL(`../../../src/backends/${PROTO_FILE}`, import.meta.url),
  ].map((u) => fileURLToPath(u));
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error(`cannot find ${PROTO_FILE}; looked in ${candidates.join(', ')}`);
  return found;
}

interface Types {
  ForwardBackwardRequest: protobuf.Type;
  ForwardBackwardOutput: protobuf.Type;
  SampleResponse: protobuf.Type;
}
let types: Types | undefined;

function protoTypes(): Types {
  if (!types) {
    const root = protobuf.parse(readFileSync(locateProto(), 'utf8'), { keepCase: true }).root;
    types = {
      ForwardBackwardRequest: root.lookupType('tinker_public.ForwardBackwardRequest'),
      ForwardBackwardOutput: root.lookupType('tinker_public.ForwardBackwardOutput'),
      SampleResponse: root.lookupType('tinker_public.SampleResponse'),
    };
  }
  return types;
}

export const PROTOBUF_CONTENT_TYPE = 'application/x-protobuf';

export const DType = { UNSPECIFIED: 0, FLOAT32: 1, INT64: 2, INT32: 3, BFLOAT16: 4 } as const;
export const StopReason = { STOP: 0, LENGTH: 1 } as const;

/** Empty top-k cell marker used by the server (`types/sample_response.py`). */
const TOPK_SENTINEL_TOKEN = 0;
const TOPK_SENTINEL_LOGPROB = -99999.0;

export interface ForwardBackwardRequestMessage {
  modelId: string;
  seqId: number;
  data: Datum[];
  lossFn: string;
  lossFnConfig?: Record<string, number>;
  forwardOnly: boolean;
}

// protobufjs returns int64 as Long (or number), bytes as Uint8Array; toObject normalises both.
const TO_OBJECT: protobuf.IConversionOptions = { longs: Number, defaults: true, arrays: true, objects: true };

function toNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (v && typeof v === 'object' && 'toNumber' in v) return (v as { toNumber(): number }).toNumber();
  return Number(v);
}

function tensorToProto(t: TensorData): Record<string, unknown> {
  const shape = t.shape ?? [t.data.length];
  const expected = shape.reduce((a, b) => a * b, 1);
  if (expected !== t.data.length) {
    throw new RangeError(`tensor shape [${shape.join(',')}] does not match ${t.data.length} values`);
  }
  if (t.dtype === 'float32') return { dense: packFloat32(t.data), dtype: DType.FLOAT32, shape };
  if (t.dtype === 'int64') return { dense: packInt64(t.data), dtype: DType.INT64, shape };
  throw new RangeError(`unsupported tensor dtype ${String(t.dtype)}`);
}

function chunkToProto(c: ModelInputChunk): Record<string, unknown> {
  if (c.type === 'encoded_text') return { encoded_text: { tokens: packInt32(c.tokens) } };
  if (c.type === 'image') {
    const image: Record<string, unknown> = { data: Buffer.from(c.data, 'base64'), format: c.format };
    if (c.expected_tokens !== undefined) image.expected_tokens = c.expected_tokens;
    return { image };
  }
  throw new RangeError(`chunk type ${(c as { type: string }).type} cannot be sent as protobuf`);
}

function spanToProto(s: ProvenanceSpan): Record<string, unknown> {
  const arm = { sequence_id: s.sequence_id, offset: s.offset, length: s.length };
  return s.kind === 'sampled' ? { sampled_tokens: arm } : { prompt_tokens: arm };
}

function spanFromProto(p: Record<string, any>): ProvenanceSpan {
  const [kind, arm] = p.sampled_tokens ? (['sampled', p.sampled_tokens] as const) : (['prompt', p.prompt_tokens] as const);
  if (!arm) throw new RangeError('provenance span has neither prompt_tokens nor sampled_tokens');
  return { kind, sequence_id: arm.sequence_id, offset: toNumber(arm.offset), length: toNumber(arm.length) };
}

function datumToProto(d: Datum): Record<string, unknown> {
  if ((d.model_input_spans === undefined) !== (d.loss_fn_input_spans === undefined)) {
    throw new RangeError('provenance comes as a pair: set model_input_spans and loss_fn_input_spans, or neither');
  }
  return {
    model_input: d.model_input.chunks.map(chunkToProto),
    loss_fn_inputs: Object.fromEntries(Object.entries(d.loss_fn_inputs).map(([k, t]) => [k, tensorToProto(t)])),
    ...(d.model_input_spans
      ? { model_input_spans: d.model_input_spans.map(spanToProto), loss_fn_input_spans: d.loss_fn_input_spans!.map(spanToProto) }
      : {}),
  };
}

export function encodeForwardBackwardRequest(req: ForwardBackwardRequestMessage): Uint8Array {
  const T = protoTypes().ForwardBackwardRequest;
  const msg = T.fromObject({
    model_id: req.modelId,
    seq_id: req.seqId,
    data: req.data.map(datumToProto),
    loss_fn: req.lossFn,
    loss_fn_config: req.lossFnConfig ?? {},
    forward_only: req.forwardOnly,
  });
  return T.encode(msg).finish();
}

/** Values of a proto tensor by its dtype; int32 widens to int64 and bfloat16 to float32, as in the SDK. */
function unpackByDtype(bytes: Uint8Array, dtype: number): [number[], TensorData['dtype']] {
  if (dtype === DType.FLOAT32) return [unpackFloat32(bytes), 'float32'];
  if (dtype === DType.INT64) return [unpackInt64(bytes), 'int64'];
  if (dtype === DType.INT32) return [unpackInt32(bytes), 'int64'];
  if (dtype === DType.BFLOAT16) return [unpackBfloat16(bytes), 'float32'];
  throw new RangeError(`unsupported tensor dtype enum ${dtype}`);
}

function protoTensorToTensorData(t: Record<string, unknown>): TensorData {
  const shape = ((t.shape as unknown[]) ?? []).map(toNumber);
  if (t.sparse_csr) throw new RangeError('sparse tensors are not supported by this decoder');
  const [data, dtype] = unpackByDtype((t.dense as Uint8Array | undefined) ?? new Uint8Array(), toNumber(t.dtype));
  return { data, dtype, shape: shape.length ? shape : [data.length] };
}

/** A result tensor (SDK 0.38's `_tensor_data_from_proto`): a sparse CSR layout stays sparse. */
function resultTensor(t: Record<string, any>): TensorData {
  const csr = t.sparse_csr as Record<string, Uint8Array> | undefined;
  if (!csr) return protoTensorToTensorData(t);
  const [data, dtype] = unpackByDtype(csr.values ?? new Uint8Array(), toNumber(t.dtype));
  return {
    data, dtype, shape: ((t.shape as unknown[]) ?? []).map(toNumber),
    sparse_crow_indices: unpackInt64(csr.crow_indices ?? new Uint8Array()),
    sparse_col_indices: unpackInt64(csr.col_indices ?? new Uint8Array()),
  };
}

function resultTensorToProto(t: TensorData): Record<string, unknown> {
  if (!t.sparse_crow_indices) return tensorToProto(t);
  const values = t.dtype === 'int64' ? packInt64(t.data) : packFloat32(t.data);
  return {
    sparse_csr: { values, crow_indices: packInt64(t.sparse_crow_indices), col_indices: packInt64(t.sparse_col_indices ?? []) },
    dtype: t.dtype === 'int64' ? DType.INT64 : DType.FLOAT32,
    shape: t.shape,
  };
}

/** Server side of encodeForwardBackwardRequest (used by the test fake server and round-trips). */
export function decodeForwardBackwardRequest(bytes: Uint8Array): ForwardBackwardRequestMessage {
  const T = protoTypes().ForwardBackwardRequest;
  const o = T.toObject(T.decode(bytes), TO_OBJECT) as Record<string, any>;
  return {
    modelId: o.model_id,
    seqId: toNumber(o.seq_id),
    lossFn: o.loss_fn,
    lossFnConfig: o.loss_fn_config,
    forwardOnly: Boolean(o.forward_only),
    data: (o.data as any[]).map((d) => ({
      model_input: {
        chunks: (d.model_input as any[]).map((c): ModelInputChunk => {
          if (c.encoded_text) return { type: 'encoded_text', tokens: unpackInt32(c.encoded_text.tokens) };
          if (c.image) {
            return {
              type: 'image',
              data: Buffer.from(c.image.data).toString('base64'),
              format: c.image.format,
              ...(c.image.expected_tokens !== undefined && c.image.expected_tokens !== null
                ? { expected_tokens: toNumber(c.image.expected_tokens) }
                : {}),
            };
          }
          throw new RangeError('unsupported chunk kind in protobuf datum');
        }),
      },
      loss_fn_inputs: Object.fromEntries(
        Object.entries(d.loss_fn_inputs as Record<string, Record<string, unknown>>).map(([k, t]) => [k, protoTensorToTensorData(t)]),
      ),
      // Empty repeated fields are absent on the wire: spans are present iff either list has a run.
      ...((d.model_input_spans as any[]).length || (d.loss_fn_input_spans as any[]).length
        ? {
            model_input_spans: (d.model_input_spans as any[]).map(spanFromProto),
            loss_fn_input_spans: (d.loss_fn_input_spans as any[]).map(spanFromProto),
          }
        : {}),
    })),
  };
}

function sliceBatched(bt: Record<string, any>): { dtype: TensorData['dtype']; perDatum: number[][]; trailing: number[] } {
  const dtype = toNumber(bt.dtype);
  const data: Uint8Array = bt.data ?? new Uint8Array();
  const offsets = unpackInt64(bt.offsets ?? new Uint8Array());
  const trailing = ((bt.trailing_shape as unknown[]) ?? []).map(toNumber);
  let width: number;
  let decode: (b: Uint8Array) => number[];
  let out: TensorData['dtype'];
  if (dtype === DType.FLOAT32) [width, decode, out] = [4, unpackFloat32, 'float32'];
  else if (dtype === DType.INT64) [width, decode, out] = [8, unpackInt64, 'int64'];
  else if (dtype === DType.INT32) [width, decode, out] = [4, unpackInt32, 'int64'];
  else if (dtype === DType.BFLOAT16) [width, decode, out] = [2, unpackBfloat16, 'float32'];
  else throw new RangeError(`unsupported BatchedTensor dtype enum ${dtype}`);
  const perDatum: number[][] = [];
  for (let i = 0; i + 1 < offsets.length; i++) {
    const [start, end] = [offsets[i], offsets[i + 1]];
    if (start > end || end > data.byteLength || start % width || end % width) {
      throw new RangeError(`BatchedTensor offsets [${start}, ${end}) invalid for ${data.byteLength} bytes`);
    }
    perDatum.push(decode(data.subarray(start, end)));
  }
  return { dtype: out, perDatum, trailing };
}

/** Mirrors deserialize_forward_backward_output of the SDK (proto/response_conv.py). */
export function decodeForwardBackwardOutput(bytes: Uint8Array): ForwardBackwardOutput {
  const T = protoTypes().ForwardBackwardOutput;
  const o = T.toObject(T.decode(bytes), TO_OBJECT) as Record<string, any>;
  const metrics: Record<string, number> = {};
  for (const [k, v] of Object.entries((o.metrics ?? {}) as Record<string, unknown>)) metrics[k] = toNumber(v);
  const records = (o.loss_fn_outputs ?? []) as Array<Record<string, any>>;
  const typeName = String(o.loss_fn_output_type ?? '');
  if (records.length === 0) {
    return { loss_fn_output_type: typeName || 'ArrayRecord', loss_fn_outputs: [], metrics };
  }
  const perField = new Map<string, { dtype: TensorData['dtype']; trailing: number[]; datums: number[][] }>();
  let numDatums = 0;
  for (const record of records) {
    numDatums += toNumber(record.num_datums ?? 0);
    for (const [name, bt] of Object.entries((record.fields ?? {}) as Record<string, any>)) {
      const sliced = sliceBatched(bt);
      const entry = perField.get(name) ?? { dtype: sliced.dtype, trailing: sliced.trailing, datums: [] };
      entry.datums.push(...sliced.perDatum);
      perField.set(name, entry);
    }
  }
  // num_datums is authoritative; older encoders left it 0, then the first field decides.
  if (numDatums === 0 && perField.size) numDatums = perField.values().next().value!.datums.length;
  const outputs: Array<Record<string, TensorData>> = [];
  for (let i = 0; i < numDatums; i++) {
    const datum: Record<string, TensorData> = {};
    for (const [name, f] of perField) {
      const values = f.datums[i];
      if (!values) throw new RangeError(`field ${name} has no values for datum ${i}`);
      const trailingElems = f.trailing.reduce((a, b) => a * b, 1);
      const leading = trailingElems ? Math.floor(values.length / trailingElems) : 0;
      datum[name] = { data: values, dtype: f.dtype, shape: [leading, ...f.trailing] };
    }
    outputs.push(datum);
  }
  // The proto path carries a `module:Class` tag; the JSON dialect carries the bare class name.
  const className = typeName.split(':').pop() ?? typeName;
  return { loss_fn_output_type: className, loss_fn_outputs: outputs, metrics };
}

/** Inverse of decodeForwardBackwardOutput: one ArrayRecord holding every datum (what servers emit). */
export function encodeForwardBackwardOutput(out: ForwardBackwardOutput): Uint8Array {
  const T = protoTypes().ForwardBackwardOutput;
  const names = out.loss_fn_outputs.length ? Object.keys(out.loss_fn_outputs[0]) : [];
  const fields: Record<string, unknown> = {};
  for (const name of names) {
    const first = out.loss_fn_outputs[0][name];
    const parts = out.loss_fn_outputs.map((d) => {
      const t = d[name];
      if (!t) throw new RangeError(`datum lacks output field ${name}`);
      return t.dtype === 'int64' ? packInt64(t.data) : packFloat32(t.data);
    });
    const offsets = [0];
    for (const p of parts) offsets.push(offsets[offsets.length - 1] + p.byteLength);
    fields[name] = {
      data: Buffer.concat(parts),
      offsets: packInt64(offsets),
      dtype: first.dtype === 'int64' ? DType.INT64 : DType.FLOAT32,
      trailing_shape: (first.shape ?? []).slice(1),
    };
  }
  const msg = T.fromObject({
    loss_fn_output_type: out.loss_fn_output_type,
    loss_fn_outputs: out.loss_fn_outputs.length
      ? [{ type_tag: out.loss_fn_output_type, fields, num_datums: out.loss_fn_outputs.length }]
      : [],
    metrics: out.metrics,
  });
  return T.encode(msg).finish();
}

/** Mirrors deserialize_sample_response + TopkPromptLogprobs conversion of the SDK. */
export function decodeSampleResponse(bytes: Uint8Array): SampleResponse {
  const T = protoTypes().SampleResponse;
  const decoded = T.decode(bytes) as unknown as Record<string, unknown>;
  const o = T.toObject(decoded as unknown as protobuf.Message, TO_OBJECT) as Record<string, any>;
  const sequences: SampledSequence[] = ((o.sequences ?? []) as any[]).map((s) => {
    const reason = toNumber(s.stop_reason);
    if (reason !== StopReason.STOP && reason !== StopReason.LENGTH) {
      throw new RangeError(`unknown stop_reason enum ${reason}`);
    }
    const logprobs: Uint8Array | undefined = s.logprobs;
    const seq: SampledSequence = {
      stop_reason: reason === StopReason.STOP ? 'stop' : 'length',
      tokens: unpackInt32(s.tokens ?? new Uint8Array()),
      logprobs: logprobs && logprobs.byteLength ? unpackFloat32(logprobs) : null,
    };
    if (s.topk_sampled_logprobs) seq.topk_logprobs = decodeTopk(s.topk_sampled_logprobs);
    return seq;
  });
  const result: SampleResponse = { sequences };
  // proto3 `optional`: presence is tracked on the decoded message, not on toObject's defaults.
  const rawPrompt = decoded.prompt_logprobs as Uint8Array | null | undefined;
  if (rawPrompt && rawPrompt.byteLength) {
    result.prompt_logprobs = unpackFloat32(rawPrompt).map((v) => (Number.isNaN(v) ? null : v));
  } else {
    result.prompt_logprobs = null;
  }
  result.topk_prompt_logprobs = decoded.topk_prompt_logprobs ? decodeTopk(o.topk_prompt_logprobs) : null;
  // A plain proto3 int: 0 (a server without a prefix cache) reads as absent, as in JSON.
  const cacheHits = toNumber(decoded.prompt_cache_hit_tokens ?? 0);
  if (cacheHits) result.prompt_cache_hit_tokens = cacheHits;
  // SDK 0.38's additions appear only when asked for (and so when present).
  if (decoded.target_prompt_logprobs) result.target_prompt_logprobs = resultTensor(o.target_prompt_logprobs);
  if (decoded.prompt_alt_tokens) {
    result.prompt_alt_tokens = { tokens: resultTensor(o.prompt_alt_tokens.tokens ?? {}), logprobs: resultTensor(o.prompt_alt_tokens.logprobs ?? {}) };
  }
  return result;
}

/** Dense length × k matrices → rows of [token_id, logprob]; a row of sentinels is null. A length
 *  or k of 0 decodes as absent (null), as in the SDK. */
function decodeTopk(topk: Record<string, any>): Array<Array<[number, number]> | null> | null {
  const n = toNumber(topk.prompt_length);
  const k = toNumber(topk.k);
  if (!(n > 0 && k > 0)) return null;
  const ids = unpackInt32(topk.token_ids ?? new Uint8Array());
  const lps = unpackFloat32(topk.logprobs ?? new Uint8Array());
  if (ids.length !== n * k || lps.length !== n * k) {
    throw new RangeError(`topk arrays have ${ids.length}/${lps.length} cells, expected ${n}x${k}`);
  }
  const rows: Array<Array<[number, number]> | null> = [];
  for (let r = 0; r < n; r++) {
    const row: Array<[number, number]> = [];
    for (let c = 0; c < k; c++) {
      const [id, lp] = [ids[r * k + c], lps[r * k + c]];
      if (id === TOPK_SENTINEL_TOKEN && lp === TOPK_SENTINEL_LOGPROB) break; // trailing empties
      row.push([id, lp]);
    }
    rows.push(row.length ? row : null);
  }
  return rows;
}

function encodeTopk(rows: Array<Array<[number, number]> | null>): Record<string, unknown> {
  const k = Math.max(0, ...rows.map((r) => (r ? r.length : 0)));
  const ids: number[] = [];
  const lps: number[] = [];
  for (const row of rows) {
    for (let c = 0; c < k; c++) {
      const cell = row?.[c];
      ids.push(cell ? cell[0] : TOPK_SENTINEL_TOKEN);
      lps.push(cell ? cell[1] : TOPK_SENTINEL_LOGPROB);
    }
  }
  return { token_ids: packInt32(ids), logprobs: packFloat32(lps), k, prompt_length: rows.length };
}

/** Inverse of decodeSampleResponse (test fake server, round-trips). */
export function encodeSampleResponse(resp: SampleResponse): Uint8Array {
  const T = protoTypes().SampleResponse;
  const obj: Record<string, unknown> = {
    sequences: resp.sequences.map((s) => ({
      stop_reason: s.stop_reason === 'stop' ? StopReason.STOP : StopReason.LENGTH,
      tokens: packInt32(s.tokens),
      ...(s.logprobs ? { logprobs: packFloat32(s.logprobs) } : {}),
      ...(s.topk_logprobs ? { topk_sampled_logprobs: encodeTopk(s.topk_logprobs) } : {}),
    })),
  };
  if (resp.prompt_logprobs) obj.prompt_logprobs = packFloat32(resp.prompt_logprobs.map((v) => (v === null ? NaN : v)));
  if (resp.topk_prompt_logprobs) obj.topk_prompt_logprobs = encodeTopk(resp.topk_prompt_logprobs);
  if (resp.prompt_cache_hit_tokens) obj.prompt_cache_hit_tokens = resp.prompt_cache_hit_tokens;
  if (resp.target_prompt_logprobs) obj.target_prompt_logprobs = resultTensorToProto(resp.target_prompt_logprobs);
  const alt = resp.prompt_alt_tokens;
  if (alt) obj.prompt_alt_tokens = { tokens: resultTensorToProto(alt.tokens), logprobs: resultTensorToProto(alt.logprobs) };
  return T.encode(T.fromObject(obj)).finish();
}
