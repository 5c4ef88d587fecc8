import protobuf from 'protobufjs';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { packFloat32, packInt32, packInt64, unpackBfloat16, unpackFloat32, unpackInt64 } from '../../src/backends/bytes.js';
import {
  decodeForwardBackwardOutput,
  decodeForwardBackwardRequest,
  decodeSampleResponse,
  DType,
  encodeForwardBackwardOutput,
  encodeForwardBackwardRequest,
  encodeSampleResponse,
} from '../../src/backends/proto.js';
import { SampleResponseJson } from '../../src/backends/schemas.js';
import type { Datum, ForwardBackwardOutput, SampleResponse } from '../../src/backends/types.js';
import { sampleResponseFromJson } from '../../src/backends/wire-json.js';

const root = protobuf.parse(
  readFileSync(fileURLToPath(new URL('../../src/backends/tinker_public.proto', import.meta.url)), 'utf8'),
  { keepCase: true },
).root;

const datum = (tokens: number[], targets: number[], weights: number[]): Datum => ({
  model_input: { chunks: [{ type: 'encoded_text', tokens }] },
  loss_fn_inputs: {
    target_tokens: { data: targets, dtype: 'int64', shape: [targets.length] },
    weights: { data: weights, dtype: 'float32', shape: [weights.length] },
  },
});

describe('little-endian packing', () => {
  it('packs and unpacks int64/float32 byte-exactly', () => {
    expect([...packInt32([1, -2])]).toEqual([1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff]);
    expect(unpackInt64(packInt64([0, 1, -1, 2 ** 40]))).toEqual([0, 1, -1, 2 ** 40]);
    expect(unpackFloat32(packFloat32([0.5, -1.25]))).toEqual([0.5, -1.25]);
    // bf16 0x3FC0 = 1.5
    expect(unpackBfloat16(new Uint8Array([0xc0, 0x3f]))).toEqual([1.5]);
    expect(() => unpackFloat32(new Uint8Array(3))).toThrow(/multiple of 4/);
    expect(() => packInt64([2 ** 60])).toThrow(/safe integer/);
  });

  it('decodes from unaligned sub-arrays', () => {
    const buf = new Uint8Array(9);
    buf.set(packFloat32([3.5, 7]), 1);
    expect(unpackFloat32(buf.subarray(1))).toEqual([3.5, 7]);
  });
});

describe('ForwardBackwardRequest (client → server)', () => {
  it('round-trips through the .proto schema with the wire layout of §8', () => {
    const req = {
      modelId: 'S:train:0',
      seqId: 7,
      data: [datum([1, 2, 3, 4], [2, 3, 4, 5], [0, 1, 1, 0.5]), datum([9, 8], [8, 7], [1, 1])],
      lossFn: 'ppo',
      lossFnConfig: { clip_low_threshold: 0.9, clip_high_threshold: 1.1 },
      forwardOnly: false,
    };
    const bytes = encodeForwardBackwardRequest(req);
    expect(decodeForwardBackwardRequest(bytes)).toEqual(req);

    // Check the raw message independently of our decoder: field types and dtype enums.
    const T = root.lookupType('tinker_public.ForwardBackwardRequest');
    const raw = T.toObject(T.decode(bytes), { longs: Number }) as any;
    expect(raw.seq_id).toBe(7);
    expect(raw.data[0].model_input[0].encoded_text.tokens).toEqual(Buffer.from(packInt32([1, 2, 3, 4])));
    expect(raw.data[0].loss_fn_inputs.target_tokens.dtype).toBe(DType.INT64);
    expect(raw.data[0].loss_fn_inputs.weights.dtype).toBe(DType.FLOAT32);
    expect(raw.data[0].loss_fn_inputs.weights.shape).toEqual([4]);
    expect(raw.data[0].loss_fn_inputs.weights.dense).toEqual(Buffer.from(packFloat32([0, 1, 1, 0.5])));

    // Field numbers are the protocol: model_id=1 (tag 0x0a), seq_id=2 (tag 0x10).
    expect(bytes[0]).toBe(0x0a);
    expect(bytes[1 + 1 + 'S:train:0'.length]).toBe(0x10);
  });

  it('encodes forward_only and image chunks as raw bytes', () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString('base64');
    const req = {
      modelId: 'm',
      seqId: 1,
      data: [{ model_input: { chunks: [{ type: 'image' as const, data: png, format: 'png' as const, expected_tokens: 3 }] }, loss_fn_inputs: {} }],
      lossFn: 'cross_entropy',
      lossFnConfig: {},
      forwardOnly: true,
    };
    const back = decodeForwardBackwardRequest(encodeForwardBackwardRequest(req));
    expect(back).toEqual(req);
  });

  it('rejects shape/data mismatches before sending', () => {
    const bad = datum([1], [2], [1]);
    bad.loss_fn_inputs.weights.shape = [2];
    expect(() => encodeForwardBackwardRequest({ modelId: 'm', seqId: 1, data: [bad], lossFn: 'cross_entropy', forwardOnly: false })).toThrow(/shape/);
  });
});

describe('ForwardBackwardOutput (server → client)', () => {
  it('slices BatchedTensor by byte offsets and reshapes with trailing_shape', () => {
    const T = root.lookupType('tinker_public.ForwardBackwardOutput');
    // Two records (chunks) to check concatenation; int32 widening; a [n, 2] field.
    const bytes = T.encode(
      T.fromObject({
        loss_fn_output_type: 'tinker.losses:CrossEntropyLossReturn',
        metrics: { 'loss:sum': 2.5 },
        loss_fn_outputs: [
          {
            num_datums: 2,
            fields: {
              logprobs: { data: packFloat32([-1, -2, -3]), offsets: packInt64([0, 8, 12]), dtype: DType.FLOAT32 },
              pairs: { data: packInt32([1, 2, 3, 4, 5, 6]), offsets: packInt64([0, 16, 24]), dtype: DType.INT32, trailing_shape: [2] },
            },
          },
          {
            num_datums: 1,
            fields: {
              logprobs: { data: packFloat32([-4]), offsets: packInt64([0, 4]), dtype: DType.FLOAT32 },
              pairs: { data: packInt32([7, 8]), offsets: packInt64([0, 8]), dtype: DType.INT32, trailing_shape: [2] },
            },
          },
        ],
      }),
    ).finish();
    const out = decodeForwardBackwardOutput(bytes);
    expect(out.loss_fn_output_type).toBe('CrossEntropyLossReturn');
    expect(out.metrics).toEqual({ 'loss:sum': 2.5 });
    expect(out.loss_fn_outputs).toEqual([
      { logprobs: { data: [-1, -2], dtype: 'float32', shape: [2] }, pairs: { data: [1, 2, 3, 4], dtype: 'int64', shape: [2, 2] } },
      { logprobs: { data: [-3], dtype: 'float32', shape: [1] }, pairs: { data: [5, 6], dtype: 'int64', shape: [1, 2] } },
      { logprobs: { data: [-4], dtype: 'float32', shape: [1] }, pairs: { data: [7, 8], dtype: 'int64', shape: [1, 2] } },
    ]);
  });

  it('round-trips our encoder and handles an empty output', () => {
    const out: ForwardBackwardOutput = {
      loss_fn_output_type: 'CrossEntropyLossReturn',
      loss_fn_outputs: [
        { logprobs: { data: [-0.5, -0.25], dtype: 'float32', shape: [2] } },
        { logprobs: { data: [-1], dtype: 'float32', shape: [1] } },
      ],
      metrics: { 'loss:sum': 1.75, 'clock_cycle:unique': 3 },
    };
    expect(decodeForwardBackwardOutput(encodeForwardBackwardOutput(out))).toEqual(out);
    const empty = decodeForwardBackwardOutput(encodeForwardBackwardOutput({ loss_fn_output_type: '', loss_fn_outputs: [], metrics: {} }));
    expect(empty).toEqual({ loss_fn_output_type: 'ArrayRecord', loss_fn_outputs: [], metrics: {} });
  });

  it('rejects offsets that point outside the data', () => {
    const T = root.lookupType('tinker_public.ForwardBackwardOutput');
    const bytes = T.encode(
      T.fromObject({ loss_fn_outputs: [{ num_datums: 1, fields: { logprobs: { data: packFloat32([1]), offsets: packInt64([0, 8]), dtype: DType.FLOAT32 } } }] }),
    ).finish();
    expect(() => decodeForwardBackwardOutput(bytes)).toThrow(/offsets/);
  });
});

describe('SampleResponse (server → client)', () => {
  it('decodes NaN prompt logprobs to null and drops top-k sentinels', () => {
    const T = root.lookupType('tinker_public.SampleResponse');
    const bytes = T.encode(
      T.fromObject({
        sequences: [
          { stop_reason: 0, tokens: packInt32([5, 6, 151645]), logprobs: packFloat32([-0.5, -0.25, -0.125]) },
          { stop_reason: 1, tokens: packInt32([7]) },
        ],
        prompt_logprobs: packFloat32([NaN, -1.5, -2]),
        topk_prompt_logprobs: {
          k: 2,
          prompt_length: 3,
          token_ids: packInt32([0, 0, 4, 5, 6, 0]),
          logprobs: packFloat32([-99999, -99999, -0.5, -1, -0.25, -99999]),
        },
      }),
    ).finish();
    expect(decodeSampleResponse(bytes)).toEqual({
      sequences: [
        { stop_reason: 'stop', tokens: [5, 6, 151645], logprobs: [-0.5, -0.25, -0.125] },
        { stop_reason: 'length', tokens: [7], logprobs: null },
      ],
      prompt_logprobs: [null, -1.5, -2],
      topk_prompt_logprobs: [null, [[4, -0.5], [5, -1]], [[6, -0.25]]],
    } satisfies SampleResponse);
  });

  it('round-trips our encoder; absent optional fields decode to null', () => {
    const resp: SampleResponse = {
      sequences: [{ stop_reason: 'length', tokens: [1, 2], logprobs: [-0.5, -0.75] }],
      prompt_logprobs: [null, -0.5],
      topk_prompt_logprobs: [null, [[3, -0.5]]],
    };
    expect(decodeSampleResponse(encodeSampleResponse(resp))).toEqual(resp);
    const bare = decodeSampleResponse(encodeSampleResponse({ sequences: [{ stop_reason: 'stop', tokens: [1] }] }));
    expect(bare).toEqual({ sequences: [{ stop_reason: 'stop', tokens: [1], logprobs: null }], prompt_logprobs: null, topk_prompt_logprobs: null });
  });

  it('reads the prefix-cache hits a server reports (a proto3 int: 0, a server without a cache, reads as absent)', () => {
    const T = root.lookupType('tinker_public.SampleResponse');
    const bytes = (hits: number) => T.encode(T.fromObject({ sequences: [{ stop_reason: 1, tokens: packInt32([7]) }], prompt_cache_hit_tokens: hits })).finish();
    expect(decodeSampleResponse(bytes(12)).prompt_cache_hit_tokens).toBe(12);
    expect(decodeSampleResponse(bytes(0))).not.toHaveProperty('prompt_cache_hit_tokens');
    const resp: SampleResponse = { sequences: [{ stop_reason: 'length', tokens: [1], logprobs: [-0.5] }], prompt_logprobs: null, topk_prompt_logprobs: null, prompt_cache_hit_tokens: 3 };
    expect(decodeSampleResponse(encodeSampleResponse(resp))).toEqual(resp);
    const json = (hits: number) => sampleResponseFromJson(SampleResponseJson.parse({ sequences: [{ tokens: [7], stop_reason: 'length' }], prompt_cache_hit_tokens: hits }));
    expect(json(12).prompt_cache_hit_tokens).toBe(12);
    expect(json(0)).not.toHaveProperty('prompt_cache_hit_tokens');
  });

  it('decodes SDK 0.38 fields: per-token top-k of samples, sparse/dense target logprobs, int32 alternatives', () => {
    const T = root.lookupType('tinker_public.SampleResponse');
    const bytes = T.encode(
      T.fromObject({
        sequences: [{
          stop_reason: 1, tokens: packInt32([5, 6]), logprobs: packFloat32([-0.5, -1]),
          topk_sampled_logprobs: { k: 2, prompt_length: 2, token_ids: packInt32([5, 9, 0, 0]), logprobs: packFloat32([-0.5, -2, -99999, -99999]) },
        }],
        target_prompt_logprobs: {
          sparse_csr: { values: packFloat32([-1.5]), crow_indices: packInt64([0, 0, 1]), col_indices: packInt64([2]) },
          dtype: DType.FLOAT32, shape: [2, 3],
        },
        prompt_alt_tokens: {
          tokens: { dense: packInt32([7, 8]), dtype: DType.INT32, shape: [2, 1] },
          logprobs: { dense: packFloat32([-0.25, -3]), dtype: DType.FLOAT32, shape: [2, 1] },
        },
      }),
    ).finish();
    const r = decodeSampleResponse(bytes);
    expect(r.sequences[0].topk_logprobs).toEqual([[[5, -0.5], [9, -2]], null]);
    expect(r.target_prompt_logprobs).toEqual({ data: [-1.5], dtype: 'float32', shape: [2, 3], sparse_crow_indices: [0, 0, 1], sparse_col_indices: [2] });
    expect(r.prompt_alt_tokens).toEqual({
      tokens: { data: [7, 8], dtype: 'int64', shape: [2, 1] },
      logprobs: { data: [-0.25, -3], dtype: 'float32', shape: [2, 1] },
    });
    expect(decodeSampleResponse(encodeSampleResponse(r))).toEqual(r);
  });
});
