// The forecasting env beyond what the reference parity covers: errors that name the file, the
// line and the column; the built-in registration and its argument errors; the shipped question set
// (its generator reproduces it, and its split has both sides and crossing events to drop).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getRenderer } from '../../../src/cookbook/renderers/registry.js';
import type { Renderer } from '../../../src/cookbook/renderers/types.js';
import { loadProphetArenaExamples, loadProphetArenaSplit } from '../../../src/cookbook/rl/envs/forecasting/data.js';
import { ForecastRLDataset } from '../../../src/cookbook/rl/envs/forecasting/env.js';
import { parseUtcDatetime } from '../../../src/cookbook/rl/envs/forecasting/iso-datetime.js';
import { formatForecast, renderPrompt } from '../../../src/cookbook/rl/envs/forecasting/prompt.js';
import { registeredRLDataset } from '../../../src/cookbook/rl/registry.js';
import { getTokenizer, shippedTokenizerDir, type Tokenizer } from '../../../src/cookbook/tokenizer.js';

const REPO = join(import.meta.dirname, '..', '..', '..');
const SHIPPED = join(REPO, 'data/forecasting/questions.csv');
const CONFIG_ARGS = JSON.parse(readFileSync(join(REPO, 'configs/rl_forecasting.json'), 'utf8')).dataset.args;

const HEADER = 'submission_id,event_ticker,title,snapshot_time,close_time,market_outcome,category,markets,sources';
const GOOD = 's1,EV1,Event,2025-09-01T00:00:00Z,2025-09-05T00:00:00Z,"{""A"": 1}",Sports,"[""A""]","[{""title"": ""T"", ""summary"": ""S""}]"';
// A record spanning lines 2-3, so the next record starts on line 4.
const MULTILINE = 's0,EV0,"Two-line\ntitle",2025-09-01T00:00:00Z,2025-09-05T00:00:00Z,"{""A"": 1}",Sports,"[""A""]","[{""title"": ""T"", ""summary"": ""S""}]"';

let dir: string;
let renderer: Renderer;
let tokenizer: Tokenizer;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'h55fc-forecasting-'));
  tokenizer = await getTokenizer('test:qwen3', shippedTokenizerDir('qwen3'));
  renderer = getRenderer('qwen3', tokenizer);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function csv(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

describe('forecasting data errors', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['missing column', `${HEADER.replace(',category', '')}\n`, /^missing-column\.csv:1: the header is missing columns \["category"\]/],
    ['outcome not binary', `${HEADER}\n${MULTILINE}\n${GOOD.replace('""A"": 1}', '""A"": 2}')}\n`, /^outcome-not-binary\.csv:4: market_outcome: expected a binary outcome \(0 or 1\) for "A"/],
    ['markets disagree', `${HEADER}\n${GOOD.replace('[""A""]', '[""B""]')}\n`, /^markets-disagree\.csv:2: market_outcome: its keys disagree with markets \["B"\]/],
    ['bad snapshot time', `${HEADER}\n\n${GOOD.replace('2025-09-01T00:00:00Z', '2025-09-31')}\n`, /^bad-snapshot-time\.csv:3: snapshot_time: invalid ISO datetime "2025-09-31"/],
    ['snapshot after close', `${HEADER}\n${GOOD.replace('2025-09-01', '2025-09-09')}\n`, /^snapshot-after-close\.csv:2: snapshot_time: must precede close_time/],
    ['bad source', `${HEADER}\n${GOOD.replace('[{""title"": ""T"", ""summary"": ""S""}]', '[{""title"": ""T"", ""summary"": ""S""}, 3]')}\n`, /^bad-source\.csv:2: sources\[1\]: expected an object/],
    ['bad cell', `${HEADER}\n${GOOD.replace('"[""A""]"', '"[A]"')}\n`, /^bad-cell\.csv:2: markets: invalid structured value/],
    ['blank cell', `${HEADER}\n${GOOD.replace(',Sports,', ', ,')}\n`, /^blank-cell\.csv:2: category: expected a non-empty value/],
    ['short row', `${HEADER}\ns1,EV1\n`, /^short-row\.csv:2: category: missing/],
    ['no rows', `${HEADER}\n`, /^no-rows\.csv: no Prophet Arena examples/],
  ];
  for (const [name, text, message] of cases) {
    it(`${name}: the file, the line and the column`, () => {
      const file = `${name.replace(/ /g, '-')}.csv`;
      expect(() => loadProphetArenaExamples(csv(file, text), file)).toThrow(message);
    });
  }

  it('a market whose snapshots disagree is named', () => {
    const text = `${HEADER}\n${GOOD}\n${GOOD.replace('s1,', 's2,').replace('2025-09-05', '2025-09-06')}\n`;
    expect(() => loadProphetArenaExamples(csv('changes.csv', text), 'changes.csv')).toThrow(/^changes\.csv:3: market EV1:A changes across snapshots \(.* from line 2\)/);
  });
});

describe('the built-in "forecasting" dataset', () => {
  const build = (args: Record<string, unknown>) => registeredRLDataset('forecasting')!({ args, renderer, tokenizer, modelName: 'tiny-qwen3' });

  it("builds the config's training and validation datasets from the shipped set", async () => {
    const { train, test } = await build(CONFIG_ARGS);
    expect(train).toBeInstanceOf(ForecastRLDataset);
    const t = train as ForecastRLDataset;
    expect(t.examples.length).toBe(54);
    expect(train.length).toBe(Math.ceil(54 / 4));
    expect(train.getBatch(0)).toHaveLength(4);
    expect(train.getBatch(train.length - 1)).toHaveLength(54 % 4 || 4);
    expect(test!.length).toBe(2);
    expect(test!.evalSetMetrics).toBeTypeOf('function');
    const [env] = await train.getBatch(0)[0].makeEnvs();
    expect(env).toBeDefined();
  });

  it('defaults are the recipe’s (16 questions a step, 32 forecasts each, 8 in validation, 3 epochs)', async () => {
    const { train, test } = await build({ data_path: 'data/forecasting/questions.csv' });
    const t = train as ForecastRLDataset;
    expect([t.batchSize, t.groupSize, t.epochs]).toEqual([16, 32, 3]);
    expect(train.length).toBe(3 * Math.ceil(54 / 16));
    expect((test as ForecastRLDataset).groupSize).toBe(8);
    expect((await build({ data_path: 'data/forecasting/questions.csv', include_validation: false })).test).toBeUndefined();
  });

  it('bad arguments name the config path', async () => {
    await expect(async () => build({})).rejects.toThrow(/dataset\.args\.data_path/);
    await expect(async () => build({ ...CONFIG_ARGS, groups_per_batch: 0 })).rejects.toThrow(/dataset\.args\.groups_per_batch/);
    await expect(async () => build({ ...CONFIG_ARGS, max_train_questions: 0 })).rejects.toThrow(/dataset\.args\.max_train_questions/);
    await expect(async () => build({ ...CONFIG_ARGS, split_date: '20-10-2025' })).rejects.toThrow(/dataset\.args\.split_date: invalid ISO datetime/);
    await expect(async () => build({ ...CONFIG_ARGS, data_path: 'data/forecasting/nope.csv' })).rejects.toThrow(/data\/forecasting\/nope\.csv: cannot read/);
    await expect(async () => build({ ...CONFIG_ARGS, split_date: '2027-01-01' })).rejects.toThrow(/empty temporal split around 2027-01-01T00:00:00\+00:00: \d+ train and 0 validation/);
  });
});

describe('the shipped question set', () => {
  it('is what scripts/gen-forecasting-data.mjs writes', () => {
    const out = join(dir, 'regenerated.csv');
    execFileSync(process.execPath, [join(REPO, 'scripts/gen-forecasting-data.mjs'), out]);
    expect(readFileSync(out, 'utf8')).toBe(readFileSync(SHIPPED, 'utf8'));
  });

  it('splits around 2025-10-20 into both sides, drops the crossing events, and prompts without the outcome', () => {
    const split = loadProphetArenaSplit(SHIPPED, { splitTime: parseUtcDatetime('2025-10-20'), maxTrainQuestions: null, maxValidationQuestions: null, seed: 0 });
    expect([split.train.length, split.validation.length, split.excluded_crossing_events]).toEqual([54, 23, 6]);
    const yes = split.train.filter((e) => e.outcome === 1).length / split.train.length;
    expect(yes).toBeGreaterThan(0.3);
    expect(yes).toBeLessThan(0.7);
    expect(new Set(split.train.map((e) => e.category)).size).toBe(5);
    for (const e of [...split.train, ...split.validation]) {
      expect(e.close_time.compare(split.split_time) < 0 || e.snapshot_time.compare(split.split_time) >= 0).toBe(true);
      expect(renderPrompt(e)).toContain(`Market:\n${e.market}\n`);
      expect(renderPrompt(e)).not.toMatch(/resolved|outcome/i);
    }
  });
});

describe('formatForecast', () => {
  it("rounds like Python's :.6f (ties to even), keeps the sign of zero", () => {
    expect([0.0078125, 0.0234375, 0.5, 1, 0, -0, 1 / 3, 0.1234565, 0.9999995].map(formatForecast)).toEqual([
      '0.007812', '0.023438', '0.500000', '1.000000', '0.000000', '-0.000000', '0.333333', '0.123456', '1.000000',
    ]);
  });
});
