// The multiple-choice suites' data loading (their prompts, letters and aggregates are checked
// beside the reference in test/parity/eval-choice.parity.test.ts): several subject configs read in
// turn and concatenated, a config the data lacks left out, one asked for by name; rows the
// reference drops; `limit` as each reference picks; a Hub id read from the Hugging Face cache;
// bad rows named by file and line.
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { formatSuites, resolveEval } from '../../../src/cli/eval.js';
import { benchmarkDataPath, loadBenchmark, pickLimit, samplesDir, type BenchmarkDataOptions } from '../../../src/cookbook/eval/benchmark-data.js';
import { numpyPermutation } from '../../../src/cookbook/shuffle.js';
import { pyShuffled } from '../../../src/cookbook/python-random.js';
import { writeJsonl } from '../hf-fixtures.js';

const dir = mkdtempSync(path.join(tmpdir(), 'h56b-choice-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const opts = (suite: string, more: Partial<BenchmarkDataOptions> = {}): BenchmarkDataOptions => ({ suite, data_path: null, data_name: null, data_split: null, limit: null, system_prompt: null, ...more });
const reduxRow = (question: string, error_type = 'ok') => ({ question, choices: ['w', 'x', 'y', 'z'], answer: 1, error_type });
const cevalRow = (question: string) => ({ id: 0, question, A: '甲', B: '乙', C: '丙', D: '丁', answer: 'A' });

describe('multi-config suites', () => {
  it('read each subject config in the reference order, grouped by subject, leaving out subjects the data lacks', async () => {
    const root = path.join(dir, 'redux');
    // virology comes after anatomy in the reference's subject list, whatever the folder order.
    writeJsonl(path.join(root, 'virology', 'test-00000-of-00001.jsonl'), [reduxRow('v1'), reduxRow('v2', 'wrong_groundtruth')]);
    writeJsonl(path.join(root, 'anatomy', 'test-00000-of-00001.jsonl'), [reduxRow('a1'), reduxRow('a2')]);
    writeJsonl(path.join(root, 'not_a_subject', 'test-00000-of-00001.jsonl'), [reduxRow('n1')]);
    const { items } = await loadBenchmark(opts('mmlu_redux', { data_path: root }));
    expect(items.map((i) => [i.group, (i.messages[0].content as string).split('\n')[0]])).toEqual([
      ['anatomy', 'a1'],
      ['anatomy', 'a2'],
      ['virology', 'v1'],
    ]);
    // One subject by name (a config outside the reference's list too).
    expect((await loadBenchmark(opts('mmlu_redux', { data_path: root, data_name: 'not_a_subject' }))).items.map((i) => i.group)).toEqual(['not_a_subject']);
    await expect(loadBenchmark(opts('mmlu_redux', { data_path: root, data_name: 'law' }))).rejects.toThrow('no config "law"');
  });

  it('`cookbook eval --list` names their datasets, a config per subject', () => {
    const list = formatSuites();
    for (const name of ['gpqa', 'mmlu_pro', 'mmlu_redux', 'supergpqa', 'ceval']) expect(list).toMatch(new RegExp(`^${name}\\s`, 'm'));
    expect(list).toContain('edinburgh-dawg/mmlu-redux (a config per subject, 30), split test');
    expect(list).toContain('ceval/ceval-exam (a config per subject, 52), split val');
    expect(list).toContain('Idavidrein/gpqa (config gpqa_diamond), split train');
  });

  it('a folder holding none of the subjects, or only flagged rows, is an error', async () => {
    const empty = path.join(dir, 'no-subjects');
    writeJsonl(path.join(empty, 'elsewhere', 'val-00000-of-00001.jsonl'), [cevalRow('q')]);
    await expect(loadBenchmark(opts('ceval', { data_path: empty }))).rejects.toThrow(/no ceval examples in split "val"; none of its 52 configs is there \(computer_network: .*no config "computer_network"/);
    const flagged = path.join(dir, 'flagged');
    writeJsonl(path.join(flagged, 'anatomy', 'test-00000-of-00001.jsonl'), [reduxRow('a1', 'bad_question_clarity')]);
    await expect(loadBenchmark(opts('mmlu_redux', { data_path: flagged }))).rejects.toThrow('no mmlu_redux examples');
  });

  it('a bad row names its file and line', async () => {
    const root = path.join(dir, 'bad-ceval');
    writeJsonl(path.join(root, 'logic', 'val-00000-of-00001.jsonl'), [cevalRow('fine'), { ...cevalRow('no choices'), B: '', C: '', D: '' }]);
    await expect(loadBenchmark(opts('ceval', { data_path: root }))).rejects.toThrow(/logic\/val-00000-of-00001\.jsonl:2: fewer than two of the choices/);
    const pro = path.join(dir, 'bad-pro');
    writeJsonl(path.join(pro, 'data', 'test-00000-of-00001.jsonl'), [{ question: 'q', options: ['a', 'b'], answer_index: 11 }]);
    await expect(loadBenchmark(opts('mmlu_pro', { data_path: pro }))).rejects.toThrow(/test-00000-of-00001\.jsonl:1: "answer_index"/);
  });
});

describe('limit, as each reference picks', () => {
  const xs = Array.from({ length: 7 }, (_, i) => i);

  it('first rows by default; an HF shuffle(42) first, even when nothing is cut; Python random(42) only when it cuts', () => {
    expect(pickLimit(xs, 3, undefined)).toEqual([0, 1, 2]);
    expect(pickLimit(xs, null, { kind: 'hf_shuffle', seed: 42 })).toEqual(xs);
    expect(pickLimit(xs, 3, { kind: 'hf_shuffle', seed: 42 })).toEqual(numpyPermutation(42, 7).slice(0, 3));
    expect(pickLimit(xs, 10, { kind: 'hf_shuffle', seed: 42 })).toEqual(numpyPermutation(42, 7));
    expect(pickLimit(xs, 3, { kind: 'python_shuffle', seed: 42 })).toEqual(pyShuffled(xs, 42).slice(0, 3));
    expect(pickLimit(xs, 7, { kind: 'python_shuffle', seed: 42 })).toEqual(xs);
    expect(numpyPermutation(42, 7)).not.toEqual(xs);
  });

  it('the shuffled suites read every row before picking; the others stop at limit', async () => {
    const all = (await loadBenchmark(opts('supergpqa'))).items;
    const perm = numpyPermutation(42, all.length);
    expect((await loadBenchmark(opts('supergpqa', { limit: 2 }))).items).toEqual(perm.slice(0, 2).map((i) => all[i]));
    const gpqa = (await loadBenchmark(opts('gpqa'))).items;
    expect((await loadBenchmark(opts('gpqa', { limit: 2 }))).items).toEqual(gpqa.slice(0, 2));
  });
});

describe('--data with a Hub id', () => {
  const saved = { cache: process.env.HF_HUB_CACHE, offline: process.env.HF_HUB_OFFLINE };
  afterEach(() => {
    for (const [key, value] of [['HF_HUB_CACHE', saved.cache], ['HF_HUB_OFFLINE', saved.offline]] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });

  it('is read from the Hugging Face cache snapshot, offline, every subject config of it', async () => {
    const cache = path.join(dir, 'hf-hub');
    const commit = 'c'.repeat(40);
    const repo = path.join(cache, 'datasets--ceval--ceval-exam');
    mkdirSync(path.join(repo, 'refs'), { recursive: true });
    writeFileSync(path.join(repo, 'refs', 'main'), commit);
    cpSync(path.join(samplesDir(), 'ceval'), path.join(repo, 'snapshots', commit), { recursive: true });
    process.env.HF_HUB_CACHE = cache;
    process.env.HF_HUB_OFFLINE = '1';
    expect(benchmarkDataPath('ceval/ceval-exam', dir)).toBe('ceval/ceval-exam');
    const fromHub = await loadBenchmark(opts('ceval', { data_path: 'ceval/ceval-exam', limit: 3 }));
    const shipped = await loadBenchmark(opts('ceval', { limit: 3 }));
    expect(fromHub.items).toEqual(shipped.items);
    expect(fromHub.source).toBe('ceval/ceval-exam');
    // Not in the cache and offline: the Hub loader says so.
    await expect(loadBenchmark(opts('ceval', { data_path: 'someone/not-cached', data_name: 'logic' }))).rejects.toThrow(/HF_HUB_OFFLINE is set/);
  });

  it('`cookbook eval … --data owner/name` keeps the Hub id; a bare missing name is a missing folder', () => {
    const runsDir = path.join(dir, 'runs');
    expect(resolveEval('tiny-qwen3', 'ceval', { data: 'ceval/ceval-exam' }, { runsDir, workflowId: 'h56b-hub' }).config.data_path).toBe('ceval/ceval-exam');
    expect(() => resolveEval('tiny-qwen3', 'ceval', { data: 'missing-dir' }, { runsDir, workflowId: 'h56b-missing' })).toThrow('--data: missing-dir does not exist');
  });

  it('a local path is made absolute; a missing one is an error that names it', () => {
    expect(benchmarkDataPath('data/eval/gpqa', path.dirname(samplesDir()).replace(/\/data$/, ''))).toBe(path.join(samplesDir(), 'gpqa'));
    expect(() => benchmarkDataPath('./missing-folder', dir)).toThrow(/\.\/missing-folder does not exist/);
  });
});
