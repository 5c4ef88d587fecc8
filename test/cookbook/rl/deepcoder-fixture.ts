// A small agentica-org/DeepCoder-Preview-Dataset as the Hugging Face hub cache holds a download of
// it: `datasets--agentica-org--DeepCoder-Preview-Dataset/` with `refs/main` naming the commit,
// `blobs/<sha256>` holding the bytes and `snapshots/<commit>/` linking each repo file to its blob.
// The repo's files are the dataset's own layout: one folder per subset (config), parquet shards
// named `<split>-0000N-of-0000M.parquet`, string columns problem / starter_code / tests (JSON text)
// / metadata (JSON text), and a README whose YAML header declares the configs (which `datasets`
// reads). The rows cover what the reference's loader handles: LiveCodeBench tests (stdin and
// functional, testtype "stdin" as lcbv5 writes it), PrimeIntellect's tests without a testtype,
// TACO's {inputs, outputs[, fn_name]} with list arguments and float outputs, and rows it drops
// (no tests, a blank problem).
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { writeParquet } from '../hf-fixtures.js';

export const DEEPCODER_ID = 'agentica-org/DeepCoder-Preview-Dataset';
export const FIXTURE_COMMIT = '0123456789abcdef0123456789abcdef01234567';

type Row = { problem: string | null; starter_code: string | null; tests: string | null; metadata: string | null };
const row = (problem: string | null, tests: unknown, extra: Partial<Row> = {}): Row => ({
  problem,
  starter_code: '',
  tests: typeof tests === 'string' || tests === null ? (tests as string | null) : JSON.stringify(tests),
  metadata: '{}',
  ...extra,
});
const stdin = (pairs: Array<[string, string]>, testtype: string | null = 'stdin_stdout') =>
  pairs.map(([input, output]) => (testtype === null ? { input, output, type: 'stdin_stdout' } : { input, output, testtype }));

const STARTER = 'class Solution:\n    def maxDifference(self, nums: List[int]) -> int:\n        ';

/** Repo files → rows (parquet) or text, as the real dataset lays them out. */
export const DEEPCODER_FILES: Record<string, Row[]> = {
  'primeintellect/train-00000-of-00001.parquet': [
    row('Read two integers and print their sum.', stdin([['1 2\n', '3\n'], ['5 5\n', '10\n']], null)),
    row('A problem whose tests were lost.', []),
    row('Print the input reversed.', stdin([['abc\n', 'cba\n']])),
  ],
  'taco/train-00000-of-00002.parquet': [
    row('Print N + 1.\n\n-----Input-----\nN', { inputs: ['1\n', '41\n'], outputs: ['2\n', '42\n'] }, { metadata: null }),
    // JSON text as Python writes it: 4.0 and 7.0 are floats (str() gives "4.0"), 1 and 3 ints.
    row('Write add(a, b).', '{"fn_name": "add", "inputs": [[1, 2], [3, 4.0]], "outputs": [[3], [7.0]]}'),
  ],
  'taco/train-00001-of-00002.parquet': [
    row('   ', stdin([['x\n', 'x\n']])),
    row('Write greet(name).', { fn_name: 'greet', inputs: [['bob']], outputs: ['hi bob'] }),
  ],
  'lcbv5/train-00000-of-00001.parquet': [
    row('Print the number of vowels in S.', stdin([['programming\n', '3\n'], ['rhythm\n', '0\n']], 'stdin')),
    row('Return the largest nums[j] - nums[i] with i < j.', [{ input: '[7, 1, 5, 4]', output: '4', testtype: 'functional' }, { input: '[5]', output: '0', testtype: 'functional' }], {
      starter_code: STARTER,
      metadata: JSON.stringify({ func_name: 'maxDifference' }),
    }),
  ],
  'lcbv5/test-00000-of-00001.parquet': [
    row('Return the largest nums[j] - nums[i] (test).', [{ input: '[9, 4]', output: '-5', testtype: 'functional' }], { starter_code: STARTER, metadata: JSON.stringify({ func_name: 'maxDifference' }) }),
    row('Print S twice.', stdin([['ab\n', 'abab\n']], 'stdin')),
  ],
  'codeforces/test-00000-of-00001.parquet': [
    row('Print the maximum of the numbers.', stdin([['3\n1 5 2\n', '5\n']]), { metadata: null }),
    row('Print the minimum of the numbers.', stdin([['3\n1 5 2\n', '1\n']])),
  ],
};

const README = `---
license: mit
configs:
- config_name: codeforces
  data_files:
  - split: test
    path: codeforces/test-*
- config_name: lcbv5
  data_files:
  - split: train
    path: lcbv5/train-*
  - split: test
    path: lcbv5/test-*
- config_name: primeintellect
  data_files:
  - split: train
    path: primeintellect/train-*
- config_name: taco
  data_files:
  - split: train
    path: taco/train-*
---

A small stand-in for agentica-org/DeepCoder-Preview-Dataset, written by a test.
`;

/**
 * Writes the hub cache under `cacheRoot` (what HF_HUB_CACHE points at) with `files` (default the
 * fixture's; extra entries add files, e.g. a broken subset) and answers the snapshot folder.
 */
export function writeDeepCoderCache(cacheRoot: string, files: Record<string, Row[] | Array<Record<string, string | null>>> = DEEPCODER_FILES): string {
  const repo = path.join(cacheRoot, `datasets--${DEEPCODER_ID.replaceAll('/', '--')}`);
  rmSync(repo, { recursive: true, force: true });
  const snapshot = path.join(repo, 'snapshots', FIXTURE_COMMIT);
  const staging = path.join(repo, '.staging');
  const add = (rel: string, bytes: Buffer) => {
    const blob = createHash('sha256').update(bytes).digest('hex');
    mkdirSync(path.join(repo, 'blobs'), { recursive: true });
    writeFileSync(path.join(repo, 'blobs', blob), bytes);
    const link = path.join(snapshot, ...rel.split('/'));
    mkdirSync(path.dirname(link), { recursive: true });
    symlinkSync(path.relative(path.dirname(link), path.join(repo, 'blobs', blob)), link);
  };
  for (const [rel, rows] of Object.entries(files)) {
    const tmp = path.join(staging, rel);
    writeParquet(tmp, rows as Array<Record<string, unknown>>);
    add(rel, readFileSync(tmp));
  }
  add('README.md', Buffer.from(README));
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(path.join(repo, 'refs'), { recursive: true });
  writeFileSync(path.join(repo, 'refs', 'main'), FIXTURE_COMMIT);
  return snapshot;
}
