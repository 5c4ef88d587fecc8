// Provenance spans on the protobuf forward_backward path: byte parity with SDK 0.38's own encoder
// (tinker/proto/request_conv.py run in its cached venv) and a lossless round trip.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeForwardBackwardRequest, encodeForwardBackwardRequest } from '../../src/backends/proto.js';
import type { Datum, ProvenanceSpan } from '../../src/backends/types.js';
import { forwardBackwardJsonBody } from '../../src/backends/wire-json.js';
import { ensureEngineEnv } from '../../src/stack/engine-env.mjs';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

type SpanRow = [ProvenanceSpan['kind'], string, number, number];
interface Case {
  tokens: number[];
  targets: number[];
  weights: number[];
  model_input_spans: SpanRow[] | null;
  loss_fn_input_spans: SpanRow[] | null;
}

const cases: Case[] = [
  // single turn: prompt then sampled, inputs drop the last position, targets the first
  {
    tokens: [11, 12, 13, 21, 22],
    targets: [12, 13, 21, 22, 23],
    weights: [0, 0, 1, 1, 1],
    model_input_spans: [['prompt', 'req-a:0', 0, 3], ['sampled', 'req-a:0', 0, 2]],
    loss_fn_input_spans: [['prompt', 'req-a:0', 1, 2], ['sampled', 'req-a:0', 0, 3]],
  },
  // two turns, large offsets (multi-byte varints), a zero-length run
  {
    tokens: [1, 2, 3, 4],
    targets: [2, 3, 4, 5],
    weights: [0, 1, 0, 1],
    model_input_spans: [['prompt', 'x:1', 300, 1], ['sampled', 'x:1', 0, 1], ['prompt', 'y:0', 70000, 0], ['prompt', 'y:0', 70002, 1], ['sampled', 'y:0', 0, 1]],
    loss_fn_input_spans: [['sampled', 'x:1', 0, 1], ['prompt', 'y:0', 70002, 2], ['sampled', 'y:0', 0, 1]],
  },
  // no provenance: the datum's bytes are what they were before spans existed
  { tokens: [5, 6], targets: [6, 7], weights: [1, 1], model_input_spans: null, loss_fn_input_spans: null },
];

const toSpans = (rows: SpanRow[] | null) =>
  rows?.map(([kind, sequence_id, offset, length]): ProvenanceSpan => ({ kind, sequence_id, offset, length }));

function toDatum(c: Case): Datum {
  const datum: Datum = {
    model_input: { chunks: [{ type: 'encoded_text', tokens: c.tokens }] },
    loss_fn_inputs: {
      target_tokens: { data: c.targets, dtype: 'int64', shape: [c.targets.length] },
      weights: { data: c.weights, dtype: 'float32', shape: [c.weights.length] },
    },
  };
  if (c.model_input_spans) {
    datum.model_input_spans = toSpans(c.model_input_spans);
    datum.loss_fn_input_spans = toSpans(c.loss_fn_input_spans);
  }
  return datum;
}

/** The raw bytes of each ForwardBackwardRequest.data entry (field 3), in order. */
function datumBytes(request: Uint8Array): string[] {
  const reader = protobuf.Reader.create(request);
  const out: string[] = [];
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    if (tag >>> 3 === 3 && (tag & 7) === 2) out.push(Buffer.from(reader.bytes()).toString('hex'));
    else reader.skipType(tag & 7);
  }
  return out;
}

let enginePython = '';

function sdkDatumBytes(input: Case[]): string[] {
  // sdk_env builds the pinned SDK venv once (cached) if it is not there yet.
  const sdkPython = execFileSync(enginePython, [here('../../engine/tests/sdk_env.py'), '0.38.0'], { encoding: 'utf8' }).trim();
  const out = execFileSync(sdkPython, [here('./provenance_sdk_encode.py')], { input: JSON.stringify(input), encoding: 'utf8' });
  return JSON.parse(out) as string[];
}

describe('provenance spans on the protobuf wire (SDK 0.38 Datum fields 3 and 4)', () => {
  beforeAll(async () => {
    enginePython = (await ensureEngineEnv()).python;
  }, 600_000);

  it('encodes each datum byte-for-byte as SDK 0.38 request_conv does', () => {
    const ours = datumBytes(encodeForwardBackwardRequest({ modelId: 'm', seqId: 1, data: cases.map(toDatum), lossFn: 'importance_sampling', forwardOnly: false }));
    expect(ours).toEqual(sdkDatumBytes(cases));
  }, 120_000);

  it('round-trips spans; a datum without them decodes without them', () => {
    const data = cases.map(toDatum);
    const back = decodeForwardBackwardRequest(encodeForwardBackwardRequest({ modelId: 'm', seqId: 1, data, lossFn: 'importance_sampling', forwardOnly: false }));
    expect(back.data.map((d) => [d.model_input_spans, d.loss_fn_input_spans])).toEqual(data.map((d) => [d.model_input_spans, d.loss_fn_input_spans]));
    expect('model_input_spans' in back.data[2]!).toBe(false);
  });

  it('refuses one span list without the other before sending', () => {
    const [first] = cases.map(toDatum);
    const { loss_fn_input_spans: _dropped, ...half } = first!;
    expect(() => encodeForwardBackwardRequest({ modelId: 'm', seqId: 1, data: [half], lossFn: 'importance_sampling', forwardOnly: false })).toThrow(/provenance comes as a pair/);
  });

  it('JSON dialect: spans are dropped, and stable_reinforce is refused since it cannot do without them', () => {
    const data = cases.map(toDatum);
    const body = forwardBackwardJsonBody({ modelId: 'm', seqId: 1, data, lossFn: 'importance_sampling', forwardOnly: false });
    expect(JSON.stringify(body)).not.toMatch(/spans|req-a/);
    expect(() => forwardBackwardJsonBody({ modelId: 'm', seqId: 1, data, lossFn: 'stable_reinforce', forwardOnly: false })).toThrow(
      /stable_reinforce.*only the protobuf/,
    );
  });
});
