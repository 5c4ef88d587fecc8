// Datasets from captured rows (src/capture/export/): SFT records keep the captured tokens and train
// on exactly the sampled ones, joining a session's exchanges only where each prompt extends the
// last token for token; comparisons pair a prompt's best and worst rewarded samples; the filters
// (run, time, tool use, reward, label) pick rows by their columns, metadata or annotations.
import { describe, expect, it } from 'vitest';
import { comparisonRecords } from '../../src/capture/export/comparisons.js';
import { filterRows, rewardOf } from '../../src/capture/export/filter.js';
import { sftRecords } from '../../src/capture/export/sft.js';
import { parseComparisonsJsonl } from '../../src/cookbook/preference/comparisons.js';
import { parseConversationsJsonl } from '../../src/cookbook/supervised/jsonl.js';
import type { Annotation, JsonValue, WireRow } from '../../src/capture/rows.js';

let cursor = 0;
function row(prompt: number[], sampled: number[], meta: Record<string, JsonValue> = {}, cols: Partial<WireRow> = {}): WireRow {
  cursor += 1;
  return {
    cursor,
    run_id: 'serve',
    run_attempt: null,
    split: null,
    iteration: null,
    group_idx: null,
    traj_idx: null,
    purpose: 'serve',
    sampling_session_id: `x${cursor}`,
    seq_id: 0,
    sample_idx: 0,
    policy_version: 'tiny-qwen3',
    created_at: 1000 + cursor,
    prompt_tokens: prompt,
    sampled_tokens: sampled,
    logprobs: sampled.map(() => -1),
    metadata: { messages: [{ role: 'user', content: `q${cursor}` }], completion: { role: 'assistant', content: `a${cursor}` }, ...meta },
    ...cols,
  };
}

describe('sft records', () => {
  it('joins a session whose prompts extend each other; weights 1 exactly on the sampled tokens', () => {
    const a = row([1, 2, 3], [4, 5], { session_id: 's' });
    const b = row([1, 2, 3, 4, 5, 6, 7], [8, 9], { session_id: 's' });
    const { records } = sftRecords([b, a]);
    expect(records).toHaveLength(1);
    expect(records[0].tokens).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(records[0].weights).toEqual([0, 0, 0, 1, 1, 0, 0, 1, 1]);
    expect(records[0].source.cursors).toEqual([a.cursor, b.cursor]);
    expect(records[0].messages).toEqual([{ role: 'user', content: `q${b.cursor}` }, { role: 'assistant', content: `a${b.cursor}` }]);
  });

  it('starts a new record where the history was re-rendered differently, and keeps sessions and exchanges apart', () => {
    const a = row([1, 2], [3, 4], { session_id: 's' });
    const b = row([1, 2, 3, 99, 5], [6], { session_id: 's' }); // the model sampled 4, the client sent back 99
    const c = row([1, 2], [3, 4]); // no session: its own exchange
    const { records } = sftRecords([a, b, c]);
    expect(records.map((r) => r.tokens)).toEqual([
      [1, 2, 3, 4],
      [1, 2, 3, 99, 5, 6],
      [1, 2, 3, 4],
    ]);
    expect(records[1].weights).toEqual([0, 0, 0, 0, 0, 1]);
  });

  it('leaves out rows without tokens and rows with images', () => {
    const { records, skipped } = sftRecords([row([1], []), row([1, 2], [3], { prompt_images: 1 }), row([5], [6])]);
    expect(records).toHaveLength(1);
    expect(skipped).toEqual({ noTokens: 1, images: 1 });
  });
});

describe('comparisons', () => {
  it('pairs the best and worst rewarded samples of one prompt; equal rewards make no pair', () => {
    const rows = [row([1, 2], [3], { reward: 0.5 }), row([1, 2], [4], { reward: 1 }), row([1, 2], [5], { reward: 0 }), row([7], [8], { reward: 1 }), row([7], [9], { reward: 1 })];
    const { records, skipped } = comparisonRecords(rows, (r) => rewardOf(r, 'reward', undefined));
    expect(records).toHaveLength(1);
    expect(records[0].chosen).toEqual([{ role: 'assistant', content: `a${rows[1].cursor}` }]);
    expect(records[0].rejected).toEqual([{ role: 'assistant', content: `a${rows[2].cursor}` }]);
    expect(records[0].prompt_conversation).toEqual([{ role: 'user', content: `q${rows[1].cursor}` }]);
    expect(skipped.noPair).toBe(2);
    // DPO's loader takes the file as it is: chosen is A.
    const [parsed] = parseComparisonsJsonl(records.map((r) => JSON.stringify(r)).join('\n'), 'pairs.jsonl');
    expect(parsed.label).toBe('A');
    expect(parsed.comparison.completion_A).toEqual([{ role: 'assistant', content: `a${rows[1].cursor}` }]);
  });

  it('sft records are rows SL’s loader takes as token records', () => {
    const { records } = sftRecords([row([1, 2, 3], [4, 5], { session_id: 's' }), row([7, 8], [9])]);
    const parsed = parseConversationsJsonl(records.map((r) => JSON.stringify(r)).join('\n'), 'sft.jsonl');
    expect(parsed.map((p) => p.record)).toEqual(records.map((r) => ({ tokens: r.tokens, weights: r.weights })));
  });
});

describe('filters', () => {
  it('by run, time, tool use, reward (metadata or annotation) and label', () => {
    const a = row([1], [2], { tool_use: true, reward: 1 }, { run_id: 'r1' });
    const b = row([1], [3], { tool_use: false }, { run_id: 'r1' });
    const c = row([1], [4], { tool_use: true, quality: 'good' }, { run_id: 'r2' });
    const rewardFor = (r: WireRow, value: number, at: number): Annotation => ({
      cursor: 100 + at,
      event_id: `e${at}`,
      run_id: r.run_id,
      kind: 'reward',
      payload: { sampling_session_id: r.sampling_session_id, seq_id: r.seq_id, sample_idx: r.sample_idx, value },
      created_at: null,
    });
    const annotations = [rewardFor(b, 5, 1), rewardFor(b, 0.1, 2)]; // the latest wins
    // The value may also sit under the kind's own name.
    annotations.push({ ...rewardFor(c, 0, 3), payload: { sampling_session_id: c.sampling_session_id, seq_id: c.seq_id, sample_idx: c.sample_idx, reward: 0.3 } });
    const ids = (rows: WireRow[]) => rows.map((r) => r.cursor);
    expect(ids(filterRows([c, b, a], { runIds: ['r1'] }))).toEqual([a.cursor, b.cursor]);
    expect(ids(filterRows([a, b, c], { toolUse: true }))).toEqual([a.cursor, c.cursor]);
    expect(ids(filterRows([a, b, c], { since: b.created_at!, until: b.created_at! }))).toEqual([b.cursor]);
    expect(ids(filterRows([a, b, c], { minReward: 0.5 }, 'reward', annotations))).toEqual([a.cursor]);
    expect(ids(filterRows([a, b, c], { minReward: 0.1 }, 'reward', annotations))).toEqual([a.cursor, b.cursor, c.cursor]);
    expect(ids(filterRows([a, b, c], { minReward: 0.2 }, 'reward', annotations))).toEqual([a.cursor, c.cursor]);
    expect(ids(filterRows([a, b, c], { label: { key: 'quality', value: 'good' } }))).toEqual([c.cursor]);
  });
});
