// Rows a single-turn suite's port cannot check (IFBench's words:start_verb: no POS tagger weights
// here) are skipped and reported rather than refusing the set: the loader leaves them out of the
// examples, counts them toward `limit` as the reference's rows, and lists them with why; a
// malformed row, with or without such an instruction, stays an error naming file and line;
// skip_unsupported false refuses as before. The results table and the --benchmarks summary mark
// a score with rows skipped as not comparable with a published full-set score.
// Fixture: test/fixtures/ifbench_skip/train.jsonl, the shipped IFBench sample with a start_verb row at line 3.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { benchmarkSummaryTable, startedCountText } from '../../../src/cli/eval.js';
import { EvalConfigSchema } from '../../../src/cookbook/eval/benchmark-config.js';
import { resolveEval, type EvalArgs } from '../../../src/cookbook/eval/resolve-eval.js';
import { loadBenchmark, type BenchmarkDataOptions } from '../../../src/cookbook/eval/benchmark-data.js';
import { resultsTable } from '../../../src/cookbook/eval/results.js';
import { exampleId } from '../../../src/cookbook/eval/suites/gsm8k.js';
import { ifbench } from '../../../src/cookbook/eval/suites/ifbench.js';
import { UnsupportedRowError } from '../../../src/cookbook/eval/suites/types.js';
import { DataFormatError } from '../../../src/cookbook/errors.js';

const FIXTURE = path.join(import.meta.dirname, '..', '..', 'fixtures', 'ifbench_skip');
const FILE = path.join(FIXTURE, 'train.jsonl');
const rows = readFileSync(FILE, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { prompt: string; instruction_id_list: string[] });
const START_VERB = rows[2]!;
const REASON = `instruction "words:start_verb" is an IFBench instruction this port cannot check: it needs nltk's averaged perceptron POS tagger weights (nltk_data taggers/averaged_perceptron_tagger_eng), which this project cannot obtain`;

const dir = mkdtempSync(path.join(tmpdir(), 'h62j-skip-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const opts = (more: Partial<BenchmarkDataOptions> = {}): BenchmarkDataOptions => ({ suite: 'ifbench', data_path: FIXTURE, data_name: null, data_split: null, limit: null, system_prompt: null, ...more });

/** A folder holding train.jsonl with these rows. */
function dataWith(name: string, lines: unknown[]): string {
  const folder = path.join(dir, name);
  mkdirSync(folder, { recursive: true });
  writeFileSync(path.join(folder, 'train.jsonl'), lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
  return folder;
}

describe('rows this port cannot check', () => {
  it('IFBench: a well-formed row asking for words:start_verb is an UnsupportedRowError with its example id and the missing data', () => {
    let thrown: unknown;
    try {
      ifbench.parseRow(START_VERB as unknown as Record<string, unknown>, 'train.jsonl:3', null);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(UnsupportedRowError);
    expect(thrown).toMatchObject({ id: exampleId('ifbench', START_VERB.prompt), reason: REASON });
  });

  it('are skipped with the reason and where they were read; the others load in order, indexed without them', async () => {
    const { items, skipped } = await loadBenchmark(opts());
    const shipped = await loadBenchmark(opts({ data_path: null }));
    expect(items.map((i) => i.id)).toEqual(shipped.items.map((i) => i.id));
    expect(skipped).toEqual([{ id: exampleId('ifbench', START_VERB.prompt), at: `${FILE}:3`, reason: REASON }]);
  });

  it('count toward limit as the reference’s rows do (limit picks rows, then the unsupported ones are left out)', async () => {
    const { items, skipped } = await loadBenchmark(opts({ limit: 3 }));
    expect(items).toHaveLength(2);
    expect(skipped).toHaveLength(1);
    const two = await loadBenchmark(opts({ limit: 2 }));
    expect([two.items.length, two.skipped]).toEqual([2, []]);
  });

  it('skip_unsupported false refuses the set, naming file, line, the instruction and the default', async () => {
    await expect(loadBenchmark(opts({ skip_unsupported: false }))).rejects.toThrow(new DataFormatError(`${FILE}:3: ${REASON} (skip_unsupported is false; leave it at its default, true, to score the other rows and list this one as skipped)`));
  });

  it('a malformed row stays an error naming file and line, also when it asks for words:start_verb', async () => {
    const badKwarg = { prompt: 'p', instruction_id_list: ['words:start_verb', 'count:numbers'], kwargs: [{}, { N: null }] };
    const data = dataWith('bad-kwarg', [rows[0], badKwarg]);
    await expect(loadBenchmark(opts({ data_path: data }))).rejects.toThrow(new DataFormatError(`${path.join(data, 'train.jsonl')}:2: instruction "count:numbers" needs kwarg "N" (a number)`));
    const unknown = dataWith('unknown-id', [{ prompt: 'p', instruction_id_list: ['words:start_verb', 'count:made_up'], kwargs: [{}, {}] }]);
    await expect(loadBenchmark(opts({ data_path: unknown }))).rejects.toThrow(/unknown-id\/train\.jsonl:1: unknown instruction "count:made_up"/);
    const noPrompt = dataWith('no-prompt', [rows[0], { instruction_id_list: ['words:start_verb'], kwargs: [{}] }]);
    await expect(loadBenchmark(opts({ data_path: noPrompt }))).rejects.toThrow(/no-prompt\/train\.jsonl:2: "prompt" must be a non-empty string/);
  });

  it('a set of nothing but such rows is refused: there is nothing to score', async () => {
    const data = dataWith('all-skipped', [START_VERB]);
    await expect(loadBenchmark(opts({ data_path: data }))).rejects.toThrow(/every one of the 1 ifbench rows picked is one this port cannot check, nothing to score \(.*train\.jsonl:1: instruction "words:start_verb"/);
  });

  it('an eval config skips by default; skip_unsupported false (`--no-skip`) asks for the old refusal', () => {
    expect(EvalConfigSchema.parse({ model: 'm', suite: 'ifbench' }).skip_unsupported).toBe(true);
    expect(EvalConfigSchema.parse({ model: 'm', suite: 'ifbench', skip_unsupported: false }).skip_unsupported).toBe(false);
    const resolved = (args: EvalArgs, id: string) => resolveEval('m', 'ifbench', args, { runsDir: path.join(dir, 'runs'), workflowId: id }).config.skip_unsupported;
    expect([resolved({}, 'a'), resolved({ noSkip: true }, 'b'), resolved({ set: ['skip_unsupported=false'] }, 'c')]).toEqual([true, false, false]);
  });
});

describe('a score with rows skipped is marked', () => {
  const metrics = { score: 0.25, num_correct: 1, num_examples: 4, num_skipped: 1 };
  const skipped = [{ id: 'ifbench_x', at: 'train.jsonl:3', reason: REASON }];
  const NOTE = 'PARTIAL: 1 of 5 rows skipped (this port or machine cannot run or check them; each is listed with why), the score is over the other 4 and is not comparable with a published full-set score';

  it('results.md: the note under the heading, each skipped row with why under the table', () => {
    const md = resultsTable({ suite: 'ifbench', model: 'm', data: 'd', metrics }, skipped).split('\n');
    expect(md.slice(0, 4)).toEqual(['suite ifbench · model m · data d', '', NOTE, '']);
    expect(md.at(-1)).toBe(`- SKIPPED ifbench_x (train.jsonl:3): ${REASON}`);
    expect(md.filter((l) => /^\| num_skipped +\| +1 \|$/.test(l))).toHaveLength(1);
    // Nothing skipped: the table as before.
    expect(resultsTable({ suite: 'gsm8k', model: 'm', data: 'd', metrics: { score: 1, num_correct: 1, num_examples: 1 } })).not.toMatch(/PARTIAL|SKIPPED|num_skipped/);
  });

  it('the `started …` line says how many rows will be skipped', () => {
    expect(startedCountText('ifbench', { count: 294, skipped: 6 })).toBe('294 examples (6 more rows skipped: this port cannot check them; the score will not be comparable with a published full-set score)');
    expect(startedCountText('gsm8k', { count: 4, skipped: 0 })).toBe('4 examples');
  });

  it('the --benchmarks summary: a skipped column, the partial score starred, its note under the table', () => {
    const t = benchmarkSummaryTable('m', [
      { suite: 'gsm8k', metrics: { score: 0.5, num_correct: 1, num_examples: 2, score_stderr: 0.5 }, resultsPath: '/r/gsm8k/results.json' },
      { suite: 'ifbench', metrics, resultsPath: '/r/ifbench/results.json' },
    ]);
    expect(t.split('\n').slice(2)).toEqual([
      '| benchmark |   score | ± stderr | correct | examples | skipped | results                 |',
      '| --------- | ------: | -------: | ------: | -------: | ------: | ----------------------- |',
      '| gsm8k     | 0.5000  |   0.5000 |       1 |        2 |       0 | /r/gsm8k/results.json   |',
      '| ifbench   | 0.2500* |        – |       1 |        4 |       1 | /r/ifbench/results.json |',
      '',
      `* ifbench: ${NOTE}`,
    ]);
  });
});
