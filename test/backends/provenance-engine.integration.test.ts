// Provenance end to end on the real engine: sample with record_stability_info through the cookbook's
// token completer, build RL datums with trajectoryToData from the real sampled sequences, and
// forward_backward them over protobuf. Correct spans are accepted; a tampered span is a 400 naming it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTinkerBackend, type TinkerBackend } from '../../src/backends/tinker-backend.js';
import type { Datum, ProvenanceSpan, SamplingSession, TrainingSession } from '../../src/backends/types.js';
import { modelInputFromInts } from '../../src/cookbook/model-input.js';
import { tinkerTokenCompleter } from '../../src/cookbook/rl/completers.js';
import { datumForLoss, trajectoryToData } from '../../src/cookbook/rl/data.js';
import type { Trajectory, Transition } from '../../src/cookbook/rl/types.js';
import { engineForFile, type FileEngine } from '../support/engine.js';

const MODEL = 'tiny-qwen3';
let engine: FileEngine;
let backend: TinkerBackend;
let trainer: TrainingSession;
let sampler: SamplingSession;
let seqId = 1;

const transition = (ob: number[], ac: Awaited<ReturnType<ReturnType<typeof tinkerTokenCompleter>>>): Transition => ({
  ob: modelInputFromInts(ob),
  ac,
  reward: 0,
  episodeDone: false,
  metrics: {},
  logs: {},
});
const trajectory = (transitions: Transition[]): Trajectory => ({ transitions, finalOb: { chunks: [] }, stopReason: null });

/** Single-turn and two-turn trajectories of real samples, recorded by the engine. */
async function sampledTrajectories(): Promise<Trajectory[]> {
  let seed = 11;
  const complete = tinkerTokenCompleter(sampler, { maxTokens: 5, temperature: 1, seedFor: () => seed++, recordStabilityInfo: true });
  const single = [21, 22, 23, 24];
  const a = await complete(modelInputFromInts(single), []);
  const first = [31, 32, 33];
  const b1 = await complete(modelInputFromInts(first), []);
  const second = [...first, ...b1.tokens, 41, 42];
  const b2 = await complete(modelInputFromInts(second), []);
  for (const ac of [a, b1, b2]) expect(ac.sequenceId).toMatch(/.+/);
  return [trajectory([transition(single, a)]), trajectory([transition(first, b1), transition(second, b2)])];
}

async function train(data: Datum[]): Promise<void> {
  // One chunk, one seq id; the engine holds a refused request's seq id as used, so move past it either way.
  const id = seqId++;
  const fb = await trainer.forwardBackward(data.map((d) => datumForLoss(d, 'importance_sampling')), 'importance_sampling', { seqId: id });
  expect(fb.seqIds).toBe(1);
  await fb.result();
}

const withTargetSpan = (d: Datum, i: number, change: (s: ProvenanceSpan) => ProvenanceSpan): Datum => ({
  ...d,
  loss_fn_input_spans: d.loss_fn_input_spans!.map((s, j) => (j === i ? change(s) : s)),
});

describe('provenance spans against the real engine', () => {
  beforeAll(async () => {
    engine = await engineForFile();
    backend = createTinkerBackend({ baseUrl: engine.baseUrl, apiKey: 'tml-provenance', env: {} });
    trainer = await backend.createTrainingSession({ baseModel: MODEL, lora: { rank: 4, seed: 3 } });
    sampler = await backend.createSamplingSession({ baseModel: MODEL });
  }, 45 * 60_000);

  afterAll(async () => {
    await backend?.close();
    await engine?.stop();
  });

  it('accepts datums built from recorded samples; refuses a tampered offset, length or sequence id with the span named', async () => {
    const [single, twoTurn] = await sampledTrajectories();
    const data = [...trajectoryToData(single!, 0.5), ...trajectoryToData(twoTurn!, -0.5)];
    expect(data).toHaveLength(2);
    for (const d of data) expect(d.loss_fn_input_spans!.some((s) => s.kind === 'sampled')).toBe(true);
    // the two-turn datum names both requests' sequences
    expect(new Set(data[1]!.model_input_spans!.map((s) => s.sequence_id)).size).toBe(2);
    await train(data);

    const sampledIdx = data[1]!.loss_fn_input_spans!.findIndex((s) => s.kind === 'sampled');
    const otherSeq = data[0]!.loss_fn_input_spans!.find((s) => s.kind === 'sampled')!.sequence_id;
    const tampered: Array<[string, Datum, RegExp]> = [
      ['offset', withTargetSpan(data[1]!, 0, (s) => ({ ...s, offset: s.offset + 1 })), /data\[1\]\.loss_fn_input_spans\[0\]/],
      ['length', withTargetSpan(data[1]!, 0, (s) => ({ ...s, length: s.length + 1 })), /data\[1\]\.loss_fn_input_spans cover/],
      ['another sequence', withTargetSpan(data[1]!, sampledIdx, (s) => ({ ...s, sequence_id: otherSeq })), new RegExp(`data\\[1\\]\\.loss_fn_input_spans\\[${sampledIdx}\\]`)],
    ];
    for (const [what, datum, message] of tampered) {
      const err = await train([data[0]!, datum]).then(() => null, (e: Error) => e);
      expect(err, what).not.toBeNull();
      expect(err!.message, what).toMatch(message);
      expect((err as { status?: number }).status, what).toBe(400);
    }
  }, 600_000);
});
