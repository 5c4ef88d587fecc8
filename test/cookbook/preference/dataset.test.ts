// Comparison JSONL loading (errors name file:line), chosen/rejected selection, datum construction
// and batching of the DPO dataset (spec §4.2).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { chosenAndRejected, parseComparisonsJsonl, swapComparison, type LabeledComparison } from '../../../src/cookbook/preference/comparisons.js';
import { buildPreferenceDatasets } from '../../../src/cookbook/preference/dataset.js';
import { TrainOnWhat } from '../../../src/cookbook/renderers/types.js';
import { datumFromModelInputWeights } from '../../../src/cookbook/supervised/datum.js';

const dir = mkdtempSync(path.join(tmpdir(), 'cookbook-pref-'));
const u = (content: string) => ({ role: 'user', content });
const a = (content: string) => ({ role: 'assistant', content });
const row = (i: number) => ({ prompt_conversation: [u(`q${i}`)], chosen: [a(`good ${i}`)], rejected: [a(`bad answer ${i}`)] });
function file(name: string, rows: unknown[]): string {
  const p = path.join(dir, name);
  writeFileSync(p, rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n');
  return p;
}

describe('comparison rows', () => {
  it('accepts the reference shape, the flat shape and chosen/rejected; tie → B is chosen', () => {
    const text = [
      JSON.stringify({ comparison: { prompt_conversation: [u('p')], completion_A: [a('x')], completion_B: [a('y')] }, label: 'A' }),
      JSON.stringify({ prompt_conversation: [], completion_A: [a('x')], completion_B: [a('y')], label: 'Tie' }),
      '',
      JSON.stringify(row(1)),
    ].join('\n');
    const rows = parseComparisonsJsonl(text, 'prefs.jsonl');
    expect(rows.map((r) => [r.line, r.label])).toEqual([[1, 'A'], [2, 'Tie'], [4, 'A']]);
    expect(chosenAndRejected(rows[0]).chosen).toEqual([a('x')]);
    expect(chosenAndRejected(rows[1])).toEqual({ chosen: [a('y')], rejected: [a('x')] });
    expect(chosenAndRejected(rows[2])).toEqual({ chosen: [a('good 1')], rejected: [a('bad answer 1')] });
  });

  it('swap exchanges the completions and flips the label (a tie stays a tie)', () => {
    const lc: LabeledComparison = { comparison: { prompt_conversation: [], completion_A: [a('x')], completion_B: [a('y')] }, label: 'A' };
    expect(swapComparison(lc)).toEqual({ comparison: { prompt_conversation: [], completion_A: [a('y')], completion_B: [a('x')] }, label: 'B' });
    expect(swapComparison({ ...lc, label: 'Tie' }).label).toBe('Tie');
    expect(chosenAndRejected(swapComparison(lc))).toEqual(chosenAndRejected(lc));
  });

  it.each([
    ['not json', /prefs\.jsonl:2: invalid JSON/],
    [JSON.stringify([1]), /prefs\.jsonl:2: expected a JSON object/],
    [JSON.stringify({ comparison: { prompt_conversation: [], completion_A: [a('x')] }, label: 'A' }), /prefs\.jsonl:2: "comparison" is missing "completion_B"/],
    [JSON.stringify({ prompt_conversation: [], completion_A: [a('x')], completion_B: [a('y')] }), /prefs\.jsonl:2: missing "label"/],
    [JSON.stringify({ prompt_conversation: [], completion_A: [a('x')], completion_B: [a('y')], label: 'C' }), /prefs\.jsonl:2: "label" must be one of "A", "B", "Tie", got "C"/],
    [JSON.stringify({ prompt_conversation: [], chosen: [a('x')] }), /prefs\.jsonl:2: missing "rejected"/],
    [JSON.stringify({ prompt_conversation: [], chosen: 'x', rejected: [a('y')] }), /prefs\.jsonl:2: "chosen" must be a list of messages/],
    [JSON.stringify({ prompt_conversation: [], chosen: [], rejected: [a('y')] }), /prefs\.jsonl:2: "chosen" is empty/],
    [JSON.stringify({ prompt_conversation: [{ role: 'robot', content: 'x' }], chosen: [a('x')], rejected: [a('y')] }), /prefs\.jsonl:2: "prompt_conversation": message 0 role "robot"/],
  ])('a bad row names file and line: %s', (bad, message) => {
    expect(() => parseComparisonsJsonl(`${JSON.stringify(row(0))}\n${bad}\n`, 'prefs.jsonl')).toThrow(message);
  });

  it('an empty file is an error', () => {
    expect(() => parseComparisonsJsonl('\n\n', 'empty.jsonl')).toThrow(/empty\.jsonl: no comparisons/);
  });
});

describe('buildPreferenceDatasets', () => {
  it('builds [chosen, rejected] per row, interleaved, with raw weights on the last assistant message', async () => {
    const p = file('ten.jsonl', Array.from({ length: 10 }, (_, i) => row(i)));
    const { train, test, renderer } = await buildPreferenceDatasets({ file_path: p, batch_size: 3, test_size: 2 }, 'tiny-qwen3');
    expect(train.length).toBe(2); // 8 train rows / 3 → 2 full batches
    expect(test!.getBatch(0).datums).toHaveLength(4);
    const batch = train.getBatch(0);
    expect(batch.datums).toHaveLength(6);
    expect(batch.lines).toHaveLength(3);
    const line = batch.lines[0];
    const expected = (completion: unknown[]) => {
      const { modelInput, weights } = renderer.buildSupervisedExample([u(`q${line - 1}`), ...(completion as never[])], TrainOnWhat.LAST_ASSISTANT_MESSAGE);
      return datumFromModelInputWeights(modelInput, weights, null, 'none');
    };
    expect(batch.datums[0]).toEqual(expected([a(`good ${line - 1}`)]));
    expect(batch.datums[1]).toEqual(expected([a(`bad answer ${line - 1}`)]));
    expect(new Set(batch.datums[0].loss_fn_inputs.weights.data)).toEqual(new Set([0, 1]));
    train.setEpoch(1);
    expect(train.getBatch(0).lines).not.toEqual(batch.lines);
  });

  it('filters a row whose completion is truncated away (with the reason), keeping the rest of the batch', async () => {
    const long = { prompt_conversation: [u('word '.repeat(60))], chosen: [a('x')], rejected: [a('y')] };
    const p = file('filtered.jsonl', [row(0), long, row(2), row(3)]);
    const { train } = await buildPreferenceDatasets({ file_path: p, batch_size: 4, max_length: 40, shuffle_seed: 0 }, 'tiny-qwen3');
    const batch = train.getBatch(0);
    expect(batch.datums).toHaveLength(6);
    expect(batch.filtered).toEqual([expect.stringMatching(/filtered\.jsonl:2: the chosen completion has no trainable tokens after truncation to max_length=40/)]);
  });

  it('a completion that does not end with an assistant message is an error naming file:line', async () => {
    const p = file('noassistant.jsonl', [row(0), { prompt_conversation: [], chosen: [a('x'), u('y')], rejected: [a('z')] }]);
    await expect(buildPreferenceDatasets({ file_path: p, batch_size: 1 }, 'tiny-qwen3')).rejects.toThrow(/noassistant\.jsonl:2: the last message of completion_A is user/);
  });

  it('the shipped example loads: 100 comparisons, chosen first', async () => {
    const { train } = await buildPreferenceDatasets({ builtin: 'example_preferences', batch_size: 4 }, 'tiny-qwen3');
    expect(train.length).toBe(25);
    expect(train.getBatch(0).filtered).toEqual([]);
  });

  it("a comparisons file trains the reference's batches: file order, shuffled only per epoch", async () => {
    // The reference (ComparisonBuilderFromJsonl + DPODatasetBuilderFromComparisons) keeps the file's
    // order and `set_epoch(e)` is HF `Dataset.shuffle(seed=e)`: these lines are what tinker-cookbook
    // 0.6.1's datasets 5.2.0 gives for a 100-row file (`Dataset.from_list(rows).shuffle(seed)`).
    const { train } = await buildPreferenceDatasets({ builtin: 'example_preferences', batch_size: 4 }, 'tiny-qwen3');
    train.setEpoch(0);
    expect([0, 1, 2].map((b) => train.getBatch(b).lines)).toEqual([[83, 37, 21, 6], [94, 17, 95, 53], [73, 91, 84, 14]]);
    train.setEpoch(1);
    expect([0, 1].map((b) => train.getBatch(b).lines)).toEqual([[49, 9, 17, 82], [7, 100, 39, 6]]);
  });

  it('test_size holds out a seeded sample; the training rows keep the file order and skip it', async () => {
    const p = file('twelve.jsonl', Array.from({ length: 12 }, (_, i) => row(i)));
    const { train, test } = await buildPreferenceDatasets({ file_path: p, batch_size: 1, test_size: 3, shuffle_seed: 5 }, 'tiny-qwen3');
    const held = test!.getBatch(0).lines;
    expect(held).toHaveLength(3);
    const trainLines = Array.from({ length: train.length }, (_, b) => train.getBatch(b).lines[0]);
    expect(new Set([...held, ...trainLines]).size).toBe(12);
    expect(trainLines).toEqual([...trainLines].sort((x, y) => x - y));
    train.setEpoch(0);
    const epoch0 = Array.from({ length: train.length }, (_, b) => train.getBatch(b).lines[0]);
    expect([...epoch0].sort((x, y) => x - y)).toEqual(trainLines.filter((l) => !held.includes(l)).sort((x, y) => x - y));
  });
});
