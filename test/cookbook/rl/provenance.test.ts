// trajectoryToData's provenance spans against the reference cookbook 0.6.1's own trajectory_to_data
// (goldens: test/fixtures/rl_provenance_gen_goldens.py), plus what the sent datum keeps and the
// stable_reinforce check before sending.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { ProvenanceSpan } from '../../../src/backends/types.js';
import { checkProvenance, datumForLoss, trajectoryToData } from '../../../src/cookbook/rl/data.js';
import { deserializeTrajectoryGroup, serializeTrajectoryGroup } from '../../../src/cookbook/rl/serialize.js';
import { type Metrics, PARSE_ERROR_MASKED_METRIC_KEY, type Trajectory, TrajectoryGroup } from '../../../src/cookbook/rl/types.js';

type SpanRow = [ProvenanceSpan['kind'], string, number, number];
interface Golden {
  name: string;
  advantage: number;
  steps: Array<{ ob: number[]; ac: number[]; logprobs: number[]; sequence_id: string | null; masked: boolean }>;
  datums: Array<{ input: number[]; target_tokens: number[]; mask: number[]; model_input_spans: SpanRow[] | null; loss_fn_input_spans: SpanRow[] | null }>;
}

const goldens = JSON.parse(readFileSync(new URL('../../fixtures/rl_provenance_goldens.json', import.meta.url), 'utf8')) as Golden[];

function trajectory(g: Golden): Trajectory {
  return {
    transitions: g.steps.map((s) => ({
      ob: { chunks: [{ type: 'encoded_text', tokens: s.ob }] },
      ac: { tokens: s.ac, maybeLogprobs: s.logprobs, stopReason: 'stop', ...(s.sequence_id === null ? {} : { sequenceId: s.sequence_id }) },
      reward: 0,
      episodeDone: false,
      metrics: (s.masked ? { [PARSE_ERROR_MASKED_METRIC_KEY]: 1 } : {}) as Metrics,
      logs: {},
    })),
    finalOb: { chunks: [] },
    stopReason: null,
  };
}

const rows = (spans: ProvenanceSpan[] | undefined): SpanRow[] | null =>
  spans === undefined ? null : spans.map((s): SpanRow => [s.kind, s.sequence_id, s.offset, s.length]);
const tokensOf = (d: ReturnType<typeof trajectoryToData>[number]) =>
  d.model_input.chunks.flatMap((c) => (c.type === 'encoded_text' ? c.tokens : []));

describe('trajectoryToData provenance (reference trajectory_to_data goldens)', () => {
  it('covers every case the generator wrote', () => {
    expect(goldens.map((g) => g.name)).toEqual([
      'single_turn', 'multi_turn_prefix', 'non_prefix_two_datums', 'action_without_sequence_id',
      'parse_error_masked_turn', 'empty_transition', 'no_sampled_target', 'one_token_action_then_observation_only',
    ]);
  });

  for (const g of goldens) {
    it(g.name, () => {
      const data = trajectoryToData(trajectory(g), g.advantage);
      expect(
        data.map((d) => ({
          input: tokensOf(d),
          target_tokens: d.loss_fn_inputs.target_tokens!.data,
          mask: d.loss_fn_inputs.mask!.data,
          model_input_spans: rows(d.model_input_spans),
          loss_fn_input_spans: rows(d.loss_fn_input_spans),
        })),
      ).toEqual(g.datums);
    });
  }

  it('include_provenance=false gives the same datums without spans', () => {
    for (const g of goldens) {
      const plain = trajectoryToData(trajectory(g), g.advantage, false);
      const withSpans = trajectoryToData(trajectory(g), g.advantage);
      expect(plain.every((d) => d.model_input_spans === undefined && d.loss_fn_input_spans === undefined)).toBe(true);
      expect(plain).toEqual(withSpans.map(({ model_input_spans: _a, loss_fn_input_spans: _b, ...d }) => d));
    }
  });

  it('the sent datum keeps the spans (removeMask, gspo)', () => {
    const [datum] = trajectoryToData(trajectory(goldens[0]!), 0.5);
    for (const loss of ['importance_sampling', 'gspo']) {
      const sent = datumForLoss(datum!, loss);
      expect(sent.loss_fn_inputs.mask).toBeUndefined();
      expect([sent.model_input_spans, sent.loss_fn_input_spans]).toEqual([datum!.model_input_spans, datum!.loss_fn_input_spans]);
    }
  });

  it('sequence ids survive the run store round trip of rollouts', () => {
    const traj = trajectory(goldens[1]!);
    const back = deserializeTrajectoryGroup(serializeTrajectoryGroup(new TrajectoryGroup([traj], [0], [{}])));
    expect(back.trajectoriesG[0]!.transitions.map((t) => t.ac.sequenceId)).toEqual(['a:0', 'b:1']);
  });

  it('checkProvenance: stable_reinforce refuses a datum without spans, naming the loss and why; other losses pass', () => {
    const withSpans = trajectoryToData(trajectory(goldens[0]!), 0.5);
    const without = trajectoryToData(trajectory(goldens.find((g) => g.name === 'action_without_sequence_id')!), 0.5);
    expect(() => checkProvenance(withSpans, 'stable_reinforce')).not.toThrow();
    expect(() => checkProvenance([...withSpans, ...without], 'stable_reinforce')).toThrow(/stable_reinforce' needs provenance on every datum, and datum 1 has none.*sequence id/);
    expect(() => checkProvenance(without, 'importance_sampling')).not.toThrow();
  });
});
