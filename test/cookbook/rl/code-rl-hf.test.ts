// code_rl on the DeepCoder dataset through an `hf` source (dataset.args.hf), read from a small
// snapshot in the Hugging Face hub cache's own layout (deepcoder-fixture.ts: refs/main, blobs,
// snapshots/<commit>/<subset>/<split>-0000N-of-0000M.parquet as links to the blobs) with the Hub
// unreachable: the reference's subsets and splits concatenated, train rows shuffled with the seed,
// rows without tests or a problem dropped as the reference drops them, malformed rows refused
// naming the file and row (or skipped with skip_bad_rows), and config mistakes named by key.
// test/parity/code-rl-hf.parity.test.ts compares the tasks with the reference's own loader.
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildRLDatasets } from '../../../src/cookbook/rl/datasets.js';
import type { CodeEnvGroupBuilder } from '../../../src/cookbook/rl/envs/code/env.js';
import { CodeRLHfSchema, loadDeepCoderHf, type CodeTask } from '../../../src/cookbook/rl/envs/code/tasks.js';
import type { RLDataset } from '../../../src/cookbook/rl/types.js';
import { DEEPCODER_FILES, DEEPCODER_ID, writeDeepCoderCache } from './deepcoder-fixture.js';

const dir = mkdtempSync(path.join(tmpdir(), 'code-rl-hf-'));
const cache = path.join(dir, 'hub');
let snapshot: string;
const saved = { HF_HUB_CACHE: process.env.HF_HUB_CACHE, HF_HUB_OFFLINE: process.env.HF_HUB_OFFLINE };

beforeAll(() => {
  snapshot = writeDeepCoderCache(cache);
  // As a worker would see it: the hub cache in its place, the Hub out of reach.
  process.env.HF_HUB_CACHE = cache;
  process.env.HF_HUB_OFFLINE = '1';
});
afterEach(() => vi.restoreAllMocks());
afterAll(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  rmSync(dir, { recursive: true, force: true });
});

const codeRL = (args: Record<string, unknown>) => buildRLDatasets({ kind: 'custom', name: 'code_rl', args: { batch_size: 2, group_size: 3, ...args } }, 'tiny-qwen3');
const tasksOf = (ds: RLDataset | undefined): CodeTask[] => {
  const out: CodeTask[] = [];
  for (let i = 0; i < (ds?.length ?? 0); i++) out.push(...(ds!.getBatch(i) as CodeEnvGroupBuilder[]).map((b) => b.task));
  return out;
};
/** The problem's own text inside LiveCodeBench's prompt. */
const question = (t: CodeTask) => /\n\n([\s\S]*?)### Format:|### Question:\n([\s\S]*?)\n\n### Format:/.exec(t.problem)!.slice(1).find((x) => x !== undefined)!.trim();

describe('code_rl from the DeepCoder dataset (hf)', () => {
  it('the Hub id resolves to the hub-cache snapshot: train = primeintellect + taco + lcbv5, test = codeforces + lcbv5, rows without tests or a problem dropped', async () => {
    const { train, test } = await codeRL({ hf: {} });
    const trainTasks = tasksOf(train);
    // 9 train rows, 2 dropped (empty tests, a blank problem); 7 problems make 3 batches of 2 (the last problem is left, as for files).
    expect(train.length).toBe(3);
    const all = (await loadDeepCoderHf(CodeRLHfSchema.parse({}), { seed: 0, skipBadRows: false })).train.tasks;
    expect(all.map(question).sort()).toEqual(
      ['Read two integers and print their sum.', 'Print the input reversed.', 'Print N + 1.\n\n-----Input-----\nN', 'Write add(a, b).', 'Write greet(name).', 'Print the number of vowels in S.', 'Return the largest nums[j] - nums[i] with i < j.'].sort(),
    );
    expect(trainTasks).toEqual(all.slice(0, 6));
    expect(tasksOf(test).map(question)).toEqual(['Print the maximum of the numbers.', 'Print the minimum of the numbers.', 'Return the largest nums[j] - nums[i] (test).', 'Print S twice.']);
    expect((test!.getBatch(0) as CodeEnvGroupBuilder[]).map((b) => b.groupSize)).toEqual([1, 1, 1, 1]);
  });

  it('normalises the tests as the reference: TACO lists and floats through str(), PrimeIntellect tests without a testtype, the starter code and func_name', async () => {
    const tasks = (await loadDeepCoderHf(CodeRLHfSchema.parse({}), { seed: 0, skipBadRows: false })).train.tasks;
    const by = (q: string) => tasks.find((t) => question(t) === q)!;
    expect(by('Write add(a, b).').tests).toEqual([
      { input: '[1, 2]', output: '3', testtype: 'functional', metadata: { func_name: 'add' } },
      { input: '[3, 4.0]', output: '7.0', testtype: 'functional', metadata: { func_name: 'add' } },
    ]);
    expect(by('Write greet(name).').tests[0]).toMatchObject({ input: "['bob']", output: 'hi bob' });
    expect(by('Read two integers and print their sum.').tests[0]).toEqual({ input: '1 2\n', output: '3\n', testtype: 'stdin_stdout', metadata: { func_name: null } });
    expect(by('Print the number of vowels in S.').tests[0].testtype).toBe('stdin');
    const functional = by('Return the largest nums[j] - nums[i] with i < j.');
    expect(functional.starterCode).toContain('def maxDifference');
    expect(functional.problem).toContain('```python\nclass Solution:\n    def maxDifference');
    expect(functional.tests.map((t) => t.metadata.func_name)).toEqual(['maxDifference', 'maxDifference']);
  });

  it('the seed shuffles the train rows (the same problems in another order); the snapshot folder given as a path reads the same', async () => {
    const order = async (seed: number, hf: Record<string, unknown> = {}) => (await loadDeepCoderHf(CodeRLHfSchema.parse(hf), { seed, skipBadRows: false })).train.tasks.map(question);
    const [zero, one] = [await order(0), await order(1)];
    expect(one).not.toEqual(zero);
    expect([...one].sort()).toEqual([...zero].sort());
    expect(await order(0, { path: snapshot })).toEqual(zero);
    // Subsets and splits as asked: lcbv5 alone.
    expect((await loadDeepCoderHf(CodeRLHfSchema.parse({ path: snapshot, train_subsets: ['lcbv5'], test_subsets: [] }), { seed: 0, skipBadRows: false })).test).toBeNull();
  });

  it('a malformed row is refused naming the file and row; skip_bad_rows drops it and says so', async () => {
    const brokenCache = path.join(dir, 'broken-hub');
    writeDeepCoderCache(brokenCache, {
      ...DEEPCODER_FILES,
      'broken/train-00000-of-00001.parquet': [
        { problem: 'Fine.', starter_code: '', tests: JSON.stringify([{ input: '1\n', output: '1\n', testtype: 'stdin' }]), metadata: '{}' },
        { problem: 'Tests cut short.', starter_code: '', tests: '[{"input": "1\\n", "outp', metadata: '{}' },
        { problem: 'A function with no name.', starter_code: '', tests: JSON.stringify([{ input: '1', output: '1', testtype: 'functional' }]), metadata: '{}' },
        { problem: 'Tests of the wrong kind.', starter_code: '', tests: '42', metadata: '{}' },
      ],
    });
    const hf = CodeRLHfSchema.parse({ train_subsets: ['broken'], test_subsets: [] });
    const hub = { hfHubCache: brokenCache, offline: true };
    // The first bad row in shuffled order stops the load.
    await expect(loadDeepCoderHf(hf, { seed: 0, skipBadRows: false, hub })).rejects.toThrow(
      /^agentica-org\/DeepCoder-Preview-Dataset\/broken\/train-00000-of-00001\.parquet row [234]: .* \(set dataset\.args\.skip_bad_rows to drop such rows/,
    );
    const skipped = await loadDeepCoderHf(hf, { seed: 0, skipBadRows: true, hub });
    expect(skipped.train.tasks.map(question)).toEqual(['Fine.']);
    expect(skipped.train.skipped.sort()).toEqual([
      `${DEEPCODER_ID}/broken/train-00000-of-00001.parquet row 2: "tests" is not JSON (Unterminated string starting at: line 1 column 19 (char 18))`,
      `${DEEPCODER_ID}/broken/train-00000-of-00001.parquet row 3: a functional test needs "func_name" in its metadata or the row's "metadata"`,
      `${DEEPCODER_ID}/broken/train-00000-of-00001.parquet row 4: "tests" must be a list of tests or a TACO {"inputs", "outputs"} object, got number`,
    ].sort());
  });

  it('through the config: skip_bad_rows warns with the rows it dropped', async () => {
    const brokenCache = path.join(dir, 'broken-hub-2');
    writeDeepCoderCache(brokenCache, {
      ...DEEPCODER_FILES,
      'broken/train-00000-of-00001.parquet': [
        { problem: 'One.', starter_code: '', tests: JSON.stringify([{ input: '1\n', output: '1\n' }]), metadata: '{}' },
        { problem: 'Two.', starter_code: '', tests: JSON.stringify([{ input: '2\n', output: '2\n' }]), metadata: '{}' },
        { problem: 'Bad.', starter_code: '', tests: 'nope', metadata: '{}' },
      ],
    });
    process.env.HF_HUB_CACHE = brokenCache;
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      await expect(codeRL({ hf: { train_subsets: ['broken'], test_subsets: [] } })).rejects.toThrow(/broken\/train-00000-of-00001\.parquet row 3: "tests" is not JSON/);
      const { train, test } = await codeRL({ hf: { train_subsets: ['broken'], test_subsets: [] }, skip_bad_rows: true });
      expect(tasksOf(train).map(question).sort()).toEqual(['One.', 'Two.']);
      expect(test).toBeUndefined();
      expect(warn).toHaveBeenCalledWith(expect.stringMatching(/code_rl: skipped 1 bad row\(s\) of agentica-org\/DeepCoder-Preview-Dataset \(train\) \(skip_bad_rows\):\n  .*row 3: "tests" is not JSON/));
    } finally {
      process.env.HF_HUB_CACHE = cache;
    }
  });

  it('a file that is not DeepCoder, an unknown subset, a dataset not in the cache, and args that clash: errors that say where', async () => {
    const otherCache = path.join(dir, 'other-hub');
    writeDeepCoderCache(otherCache, { 'chat/train-00000-of-00001.parquet': [{ prompt_id: 'p1', text: 'hello' }] });
    await expect(loadDeepCoderHf(CodeRLHfSchema.parse({ train_subsets: ['chat'], test_subsets: [] }), { seed: 0, skipBadRows: true, hub: { hfHubCache: otherCache, offline: true } })).rejects.toThrow(
      `${DEEPCODER_ID}/chat/train-00000-of-00001.parquet row 1: not a DeepCoder problem: it needs a "problem" (or "question"/"prompt") and a "tests" (or "ground_truth") column; columns found: prompt_id, text`,
    );
    await expect(codeRL({ hf: { train_subsets: ['primeintellect', 'nope'] } })).rejects.toThrow(/no config "nope" \(dataset\.args\.hf\.train_subsets\); configs found: codeforces, lcbv5, primeintellect, taco/);
    await expect(codeRL({ hf: { path: 'someone/other-dataset' } })).rejects.toThrow(/HF_HUB_OFFLINE is set and Hugging Face dataset "someone\/other-dataset" \(revision main\) is not in the cache/);
    await expect(codeRL({})).rejects.toThrow('dataset.args.train_file: set train_file or hf (one of them) (environment "code_rl")');
    await expect(codeRL({ hf: {}, train_file: 'data/code_rl_problems.jsonl' })).rejects.toThrow('dataset.args.train_file: set train_file or hf (one of them)');
    await expect(codeRL({ hf: {}, test_file: 'data/code_rl_problems.jsonl' })).rejects.toThrow('dataset.args.test_file: set test_file with train_file');
    // The shipped problems still load from their file, in file order.
    expect(tasksOf((await codeRL({ train_file: 'data/code_rl_problems.jsonl' })).train)).toHaveLength(6);
  });

  it('a snapshot file whose blob never finished downloading (a dangling link) is not read', async () => {
    const partialCache = path.join(dir, 'partial-hub');
    const snap = writeDeepCoderCache(partialCache);
    symlinkSync('../../../blobs/missing', path.join(snap, 'lcbv5', 'train-00001-of-00002.parquet'));
    const tasks = (await loadDeepCoderHf(CodeRLHfSchema.parse({ train_subsets: ['lcbv5'], test_subsets: [] }), { seed: 0, skipBadRows: false, hub: { hfHubCache: partialCache, offline: true } })).train.tasks;
    expect(tasks).toHaveLength(2);
  });
});
